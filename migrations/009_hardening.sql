-- disabled_reason is a code (docs/webhooks.md); rows written before it was one held a sentence.
UPDATE webhooks SET disabled_reason = 'receiver_gone' WHERE disabled_reason LIKE 'The receiver answered 410%';
UPDATE webhooks SET disabled_reason = 'failing_too_long' WHERE disabled_reason LIKE 'Deliveries failed for %';

-- Pruning and the queue gauges walked whole tables (EXPLAIN before/after in docs/performance.md).
-- Pruning deletes finished deliveries by age: the index holds finished rows only, keyed by that age.
CREATE INDEX deliveries_finished_age ON deliveries ((coalesce(completed_at, updated_at))) WHERE status IN ('succeeded', 'failed', 'cancelled');
-- ANALYZE keeps no statistics for the expression of a partial index: without these the planner
-- guesses a third of the table matches any age and keeps the sequential scan (measured).
CREATE STATISTICS deliveries_finished_age_stats ON (coalesce(completed_at, updated_at)) FROM deliveries;
-- The failed-deliveries gauge counts these, and replay looks them up per webhook and creation time.
CREATE INDEX deliveries_failed_webhook_created ON deliveries (webhook_id, created_at) WHERE status = 'failed';
-- Pruning deletes attempts by start time.
CREATE INDEX delivery_attempts_started ON delivery_attempts (started_at);
