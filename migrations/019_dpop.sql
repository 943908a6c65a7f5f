-- Issue 32: sender-constrained sessions (DPoP, RFC 9449; docs/authentication.md).
-- The thumbprint (RFC 7638, base64url SHA-256) of the key a session is bound to; null for a session
-- of a client that sent no proof. A new nullable column: the previous release neither reads nor
-- writes it and keeps working (it does not enforce the binding while it still runs, for one rolling
-- upgrade).
ALTER TABLE sessions ADD COLUMN dpop_jkt text;

-- The proofs seen while they can still be presented: a proof's key is SHA-256 of its key
-- thumbprint and its jti, kept until its iat leaves the accepted window (expires_at). Unique, so
-- that one insert by any process both records a proof and refuses a replay. Only proofs attached to
-- an otherwise valid login, refresh or access token are written (src/auth/dpop-replay.ts), so nobody
-- without a credential can grow it; expired rows are pruned with the other auth records.
CREATE TABLE dpop_proofs (
  key bytea PRIMARY KEY,
  expires_at timestamptz NOT NULL
);
CREATE INDEX dpop_proofs_expiry ON dpop_proofs (expires_at);
