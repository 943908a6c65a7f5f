-- Issue 34: portal links made with an API key (src/portal/portal-links.routes.ts). A link, and the
-- session it opens, acts as its maker: a user (as before) or an API key, exactly one of the two. The
-- key's session ends when the key is revoked or expires (src/portal/portal-sessions.ts), as the
-- key's own requests would. Nullable columns, and checks that every existing row already
-- passes (they all name a user): the previous release keeps working beside this one, and reads a
-- key's link or session as no link or session (its joins on users find no row).
ALTER TABLE portal_links ALTER COLUMN created_by DROP NOT NULL;
ALTER TABLE portal_links ADD COLUMN created_by_api_key integer REFERENCES api_keys (id);
ALTER TABLE portal_links ADD CONSTRAINT portal_links_one_maker CHECK ((created_by IS NULL) <> (created_by_api_key IS NULL));

ALTER TABLE portal_sessions ALTER COLUMN user_id DROP NOT NULL;
ALTER TABLE portal_sessions ADD COLUMN api_key_id integer REFERENCES api_keys (id);
ALTER TABLE portal_sessions ADD CONSTRAINT portal_sessions_one_maker CHECK ((user_id IS NULL) <> (api_key_id IS NULL));
