-- An event that matched no webhook keeps no body (docs/events.md, "What is kept"): its row stays
-- only so that its event_id answers a repeat, which reads delivery_count and request_hash. The
-- intake now writes the body together with the fan-out's count, and only when a delivery will send it.
-- Metadata only (no table rewrite, no scan), and the previous release, which always writes a body
-- and reads one only for events with deliveries, keeps working on it. Rows written before keep
-- their bodies until pruned (DELIVERY_RETENTION_DAYS): rewriting them here would hold the table.
ALTER TABLE events ALTER COLUMN body DROP NOT NULL;
