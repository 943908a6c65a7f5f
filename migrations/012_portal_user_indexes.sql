-- Ending every session of a user (src/auth/sessions.repository.ts: revoke-all, a password change or
-- reset, a deactivation, a reused refresh token) also deletes the portal sessions its links opened
-- and its links not used yet, and deleting a user cascades to both tables: without these indexes
-- each of those read every portal session and link.
CREATE INDEX portal_sessions_user ON portal_sessions (user_id);
CREATE INDEX portal_links_creator ON portal_links (created_by);
