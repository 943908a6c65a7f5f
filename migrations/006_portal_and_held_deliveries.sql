-- Issue 11: a real pause (held deliveries), what an attempt sent, and the web portal's sessions.

-- 'held': recorded while its webhook was paused; released in order (as pending) when it is resumed.
-- The claim only takes pending/delivering rows, so held rows are never sent while paused.
-- (No 'cancelled': migration 005 removed it, issue 10.)
ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check
  CHECK (status IN ('pending', 'delivering', 'succeeded', 'failed', 'held'));
CREATE INDEX deliveries_held ON deliveries (webhook_id, id) WHERE status = 'held';
-- Delivery log filters by entity within a webhook (event_id goes through events' unique key).
CREATE INDEX deliveries_webhook_entity ON deliveries (webhook_id, entity_key, created_at DESC);

-- Fan-out matches active webhooks and paused ones (which hold what they match).
CREATE INDEX webhooks_matching_or_paused ON webhooks (marketplace_code, topic)
  WHERE active OR disabled_reason = 'disabled_by_user';

-- The request headers of an attempt as sent (signature headers included, secret-looking custom
-- header values masked), so that a receiver's developer can compare them with what they verified.
ALTER TABLE delivery_attempts ADD COLUMN request_headers jsonb;

-- One-time portal links: only a SHA-256 of the token is stored; used_at makes it single use.
CREATE TABLE portal_links (
  token_hash bytea PRIMARY KEY,
  marketplace_code text NOT NULL REFERENCES marketplaces (code) ON DELETE CASCADE,
  -- The scope: a seller's own webhooks in the marketplace, or (NULL) the marketplace's own webhooks.
  seller_id integer REFERENCES sellers (id) ON DELETE CASCADE,
  created_by integer NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX portal_links_expires ON portal_links (expires_at);

-- Portal sessions: the cookie carries a random id; only its SHA-256 is stored. A session acts as a
-- principal (role, seller, marketplace) and, from a portal link, is limited to one marketplace.
CREATE TABLE portal_sessions (
  id_hash bytea PRIMARY KEY,
  csrf_token text NOT NULL,
  user_id integer NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  -- The API session of a password sign-in: revoking it (logout, revoke-all) ends the portal session too.
  auth_session_id uuid REFERENCES sessions (id) ON DELETE CASCADE,
  role text NOT NULL CHECK (role IN ('seller', 'marketplace', 'admin')),
  seller_id integer NOT NULL,
  marketplace_code text,
  -- Set for portal-link sessions: the only marketplace the session may see.
  scope_marketplace text,
  display_name text NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX portal_sessions_expires ON portal_sessions (expires_at);
