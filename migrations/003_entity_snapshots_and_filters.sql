-- Issue 31: change-aware notifications and webhook filters.

-- The last accepted publication per (marketplace, seller, publication id) and the last accepted order
-- with its state per (marketplace, seller, order reference): written in the intake's transaction
-- (src/events/snapshots/), under a row lock, so that concurrent events of one entity each compare
-- with the one accepted before them. One row per entity; pruned with the events it came from
-- (DELIVERY_RETENTION_DAYS after its last update: src/delivery/maintenance.ts). Deleting a seller
-- or a marketplace deletes its snapshots.
CREATE TABLE entity_snapshots (
  marketplace_code text NOT NULL REFERENCES marketplaces (code) ON DELETE CASCADE,
  seller_id integer NOT NULL REFERENCES sellers (id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('publication', 'order')),
  -- The publication id (as text) or the order reference: the event's entity_id.
  entity_id text NOT NULL,
  -- The entity object as the notification carried it. json, not jsonb: compared in the application
  -- (canonical JSON), never in SQL, and kept as written.
  snapshot json NOT NULL,
  -- Orders: the state the order is in (the last accepted state_to, else the order's status); null
  -- for publications and when neither was a status code.
  state text,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (marketplace_code, seller_id, kind, entity_id)
);
CREATE INDEX entity_snapshots_updated_at ON entity_snapshots (updated_at);
CREATE INDEX entity_snapshots_seller ON entity_snapshots (seller_id);

-- An event whose entity equalled its last snapshot: it created no deliveries, and a repeat of its
-- event_id answers `"unchanged": true` again.
ALTER TABLE events ADD COLUMN unchanged boolean NOT NULL DEFAULT false;

-- A webhook's filter (src/webhooks/filter/): a MongoDB-style query over the notification body,
-- evaluated at intake; null: every notification of its topic.
ALTER TABLE webhooks ADD COLUMN filter jsonb CHECK (filter IS NULL OR jsonb_typeof(filter) = 'object');
