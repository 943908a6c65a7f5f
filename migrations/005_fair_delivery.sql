-- Issue 10: per-tenant ordering and idempotency keys, a claim driven by indexes, no `cancelled`.

-- Per-entity order is kept per (webhook, marketplace, seller, entity): a seller's deliveries never
-- wait behind another seller's delivery of an entity with the same id. The key is
-- "<marketplace>:<seller>:<entity>"; neither a marketplace code nor a seller id can contain ':'.
UPDATE deliveries d
   SET entity_key = e.marketplace_code || ':' || e.seller_id || ':' || e.entity_id
  FROM events e
 WHERE e.id = d.event_id;

-- event_id is an idempotency key of the producer: the seller the event is for. Two sellers may use
-- the same key, and neither can see or block the other's use of it.
ALTER TABLE events DROP CONSTRAINT events_marketplace_code_event_id_key;
ALTER TABLE events ADD CONSTRAINT events_producer_event_id_key UNIQUE (marketplace_code, seller_id, event_id);

-- `cancelled` was never set by anything: deleting a webhook deletes its deliveries. 'held' (issue 11,
-- migration 006) is kept: a database that applied 006 before this one must not lose it.
UPDATE deliveries SET status = 'failed', completed_at = coalesce(completed_at, updated_at) WHERE status = 'cancelled';
ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check CHECK (status IN ('pending', 'delivering', 'succeeded', 'failed', 'held'));

-- The claim (src/delivery/claim.ts) reads only these:
-- * waiting work per webhook in due order: finds the webhooks that have waiting work (a skip scan,
--   one probe per such webhook) and walks each one's due rows only as far as it may take;
CREATE INDEX deliveries_pending_webhook_due ON deliveries (webhook_id, next_attempt_at, id) WHERE status = 'pending';
-- * expired leases, given back to `pending` before each claim (the rows a dead worker held).
CREATE INDEX deliveries_lease_expiry ON deliveries (lease_expires_at) WHERE status = 'delivering';
-- Replaced by deliveries_pending_webhook_due (deliveries_due stays: the worker's next wake-up time
-- and the queue metrics read it).
DROP INDEX deliveries_webhook_due;
