-- The delivery engine's streams (src/delivery/queue/): inside one webhook, the deliveries of one
-- seller are a stream, and a claim hands a webhook's free slots out across its streams, so that on a
-- marketplace webhook that receives every seller's events (seller_id '*') one seller's backlog does
-- not hold back another seller's notification. A delivery's seller is the middle part of its
-- entity_key (marketplace:seller:entity, written by the intake), read with this very expression in
-- every query that should use the index: an expression index rather than a new column, so that
-- nothing is rewritten and the intake writes nothing more.
-- Serves the claim's skip scan over a webhook's streams and its count of each stream's due rows,
-- and the take of a stream's rows in due order. Pending rows only, like deliveries_pending_webhook_due.
CREATE INDEX deliveries_pending_stream_due ON deliveries_queue (webhook_id, (split_part(entity_key, ':', 2)), next_attempt_at, id) WHERE status = 'pending';
