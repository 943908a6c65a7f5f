-- The delivery claim walks each webhook's unfinished deliveries in due order and counts its live
-- leases; without these it sorts the whole backlog on every claim.
CREATE INDEX deliveries_webhook_due ON deliveries (webhook_id, next_attempt_at, id) WHERE status IN ('pending', 'delivering');
CREATE INDEX deliveries_webhook_delivering ON deliveries (webhook_id) WHERE status = 'delivering';
