-- Issue 32 (DPoP): the key a refresh token was issued bound to, per token rather than per session.
-- A Bearer session becomes bound on a refresh with a proof; the tokens issued before that were
-- never bound, and presenting one after its rotation is reuse as for any Bearer token (a thief who
-- bound a stolen Bearer session to a key of its own must not escape the reuse sweep). Null: issued
-- to a client that sent no proof. Tokens of sessions bound so far keep their session's key. The
-- previous release neither reads nor writes it.
ALTER TABLE refresh_tokens ADD COLUMN dpop_jkt text;
UPDATE refresh_tokens rt SET dpop_jkt = s.dpop_jkt FROM sessions s WHERE s.id = rt.session_id AND s.dpop_jkt IS NOT NULL;
