-- Issue 28 (item 3): a refresh token replayed after its session (its family) ended is an invalid
-- token, not a new breach. Each such replay could write an audit row; this column records when
-- the session's last one was written, so that a replay loop writes at most one per session and hour
-- (src/auth/refresh.service.ts). Added only: the previous release neither reads nor writes it.
ALTER TABLE sessions ADD COLUMN replay_audited_at timestamptz;
