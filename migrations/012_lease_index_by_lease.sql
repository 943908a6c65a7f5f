-- Issue 10: the completion finds its rows by primary key (id = ANY(ids), src/delivery/complete.ts).
-- Its plan is made once (a prepared statement), and with deliveries_lease_expiry's predicate being
-- status = 'delivering', which the completion's own condition implies, the planner read every row
-- in flight through that index and matched the batch against each: 0.7 of a 2.2 ms completion in
-- scenario 4, and growing with what all workers hold. Keyed on the lease itself, the index serves
-- what asks about leases (recovery, the gauges, the claim's live leases), all of which compare
-- lease_expires_at, and nothing else. A lease is set exactly while a row is being delivered.
DROP INDEX deliveries_lease_expiry;
CREATE INDEX deliveries_lease_expiry ON deliveries_queue (lease_expires_at) WHERE lease_expires_at IS NOT NULL;
