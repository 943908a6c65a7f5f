-- disabled_reason is a code (docs/webhooks.md); rows written before it was one held a sentence.
UPDATE webhooks SET disabled_reason = 'receiver_gone' WHERE disabled_reason LIKE 'The receiver answered 410%';
UPDATE webhooks SET disabled_reason = 'failing_too_long' WHERE disabled_reason LIKE 'Deliveries failed for %';

-- Pruning deletes finished deliveries by age, and the queue gauges count failed ones: both walked
-- the whole deliveries table (a sequential scan at 300 000 rows, docs/performance.md). This index
-- holds only finished rows, keyed by status then the age pruning uses.
CREATE INDEX deliveries_finished_age ON deliveries (status, (coalesce(completed_at, updated_at))) WHERE status IN ('succeeded', 'failed', 'cancelled');
-- Pruning deletes attempts by start time.
CREATE INDEX delivery_attempts_started ON delivery_attempts (started_at);
