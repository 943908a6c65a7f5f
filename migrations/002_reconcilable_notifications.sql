-- Issue 30: notifications a consumer can reconcile (docs/webhooks.md, "Sequence numbers and the feed").

-- 1. Per-entity sequence numbers. The last number given per (webhook, entity): the intake's fan-out
-- (src/events/events.repository.ts) upserts the row of each webhook it creates a delivery for, in
-- the same statement, so that two intakes of one entity for one webhook are serialised on this row
-- (the second waits for the first to commit) and get n and n + 1, never the same number nor a gap.
-- Kept after the deliveries are pruned (a consumer must never see an entity start at 1 again); gone
-- with the webhook. One row per entity a webhook ever received.
CREATE TABLE entity_sequences (
  webhook_id bigint NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  entity_key text NOT NULL,
  last_sequence bigint NOT NULL,
  CONSTRAINT entity_sequences_pkey PRIMARY KEY (webhook_id, entity_key)
);

-- The delivery's number, sent as the plaza-entity-sequence header on every attempt and shown by the
-- feed. Deliveries made before this migration are numbered here from the oldest kept one.
-- Nullable, as the rolling-upgrade rule asks (docs/operations.md, Upgrades): the previous release's
-- intake, still running during an upgrade, writes deliveries without a number (and without counting
-- them); such a delivery is sent without the header and listed with sequence null.
ALTER TABLE deliveries ADD COLUMN sequence bigint;
WITH numbered AS (
  SELECT id, status, row_number() OVER (PARTITION BY webhook_id, entity_key ORDER BY id) AS n FROM deliveries
)
UPDATE deliveries d SET sequence = numbered.n FROM numbered WHERE d.id = numbered.id AND d.status = numbered.status;
INSERT INTO entity_sequences (webhook_id, entity_key, last_sequence)
SELECT webhook_id, entity_key, max(sequence) FROM deliveries GROUP BY webhook_id, entity_key;

-- 2. The notification feed: a webhook's deliveries in id order from a position (one range scan per
-- page, whatever the number of deliveries kept).
CREATE INDEX deliveries_webhook_id ON deliveries (webhook_id, id);

-- 3. Latest-state mode. 'latest': a new notification of an entity supersedes the webhook's unsent
-- ones of that entity (pending, waiting for a retry, or held); they become 'superseded', with the
-- id of the delivery that replaced them. A finished state: at rest, never claimed, replayed or
-- released by a resume.
ALTER TABLE webhooks ADD COLUMN delivery_mode text NOT NULL DEFAULT 'all' CHECK (delivery_mode IN ('all', 'latest'));
ALTER TABLE deliveries ADD COLUMN superseded_by bigint;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check
  CHECK (status IN ('pending', 'delivering', 'succeeded', 'failed', 'held', 'superseded'));
-- A partition's list of values cannot be altered in place: detached and attached again with the
-- new value (the attach checks the partition's rows once).
ALTER TABLE deliveries DETACH PARTITION deliveries_at_rest;
ALTER TABLE deliveries ATTACH PARTITION deliveries_at_rest FOR VALUES IN ('succeeded', 'failed', 'held', 'superseded');
-- Pruned by age like the other finished ones (src/delivery/maintenance.ts).
DROP INDEX deliveries_finished_age;
CREATE INDEX deliveries_finished_age ON deliveries_at_rest ((coalesce(completed_at, updated_at))) WHERE status IN ('succeeded', 'failed', 'superseded');
