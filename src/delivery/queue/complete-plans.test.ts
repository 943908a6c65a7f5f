import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Database, Queryable } from '../../db/database.js';
import { busiest, execute, explain, recordingQueryable, rolledBack, type RecordedStatement } from '../../testing/query-plans.js';
import { createTestDatabase, type TestDatabase } from '../../testing/test-database.js';
import { completeAttempts, COMPLETION_SETTINGS } from './complete.js';

/** What the webhooks and each part of the queue grow to once the plans are made. */
const GROWN = 20_000;

/** `count` deliveries spread over the first five webhooks, their events numbered from `from`, in `status` (delivering: leased by another worker). */
async function seedDeliveries(db: Queryable, from: number, count: number, status: string): Promise<void> {
  await db.query(
    `WITH e AS (
       INSERT INTO events (event_id, marketplace_code, topic, seller_id, entity_id, body, delivery_count, request_hash, created_at)
       SELECT 'e' || n, 'plans', 'order/create', 1, n::text, '{}'::json, 1, 'x', now() FROM generate_series($1::int, $1::int + $2::int - 1) n
       RETURNING id
     )
     INSERT INTO deliveries (event_id, webhook_id, entity_key, message_id, status, next_attempt_at, created_at, updated_at, completed_at, sequence, leased_by, lease_expires_at)
     SELECT e.id, w.first + e.id % 5, 'plans:1:' || e.id, 'msg_' || e.id, $3, now(), now(), now(),
            CASE WHEN $3 = 'succeeded' THEN now() END, 1,
            CASE WHEN $3 = 'delivering' THEN 'another' END, CASE WHEN $3 = 'delivering' THEN now() + interval '1 hour' END
       FROM e, (SELECT min(id) AS first FROM webhooks) w`,
    [from, count, status],
  );
}

/** The completion's statements for one attempt of `delivery`, recorded with their values. */
async function completionStatements(delivery: { id: number; webhook_id: number }): Promise<RecordedStatement[]> {
  const statements: RecordedStatement[] = [];
  // The transaction's statements recorded; its settings (COMPLETION_SETTINGS) are the test's own.
  const tx: Queryable = { ...recordingQueryable(statements, 'completion', () => ({ rows: [], rowCount: 0 })), exec: async () => {} };
  await completeAttempts(
    { transaction: (work: (tx: Queryable) => Promise<unknown>) => work(tx) } as unknown as Database,
    // The start as text: EXECUTE takes the values as literals (query-plans.ts).
    [{ deliveryId: delivery.id, webhookId: delivery.webhook_id, startedAt: new Date().toISOString() as unknown as Date, durationMs: 3, statusCode: 200, error: null, responseBody: 'ok', outcome: { kind: 'succeeded' } }],
    { workerId: 'plans', clockOffsetMs: 0, disableAfterDays: 5 },
  );
  return statements;
}

/**
 * The completion's two prepared statements (the webhooks' lock, the record) run with a generic plan
 * (COMPLETION_SETTINGS), made once per connection and kept until a VACUUM or ANALYZE of a table they
 * read: a worker that starts on a new installation makes them on a few webhooks and a short queue,
 * and keeps them as both grow. Each must still read only the batch's rows: made on five webhooks and
 * one delivery, the lock scanned every webhook (19 996 rows here) without enable_seqscan = off, and
 * the record read every worker's leases (20 001) through deliveries_lease_expiry while it asked for
 * status = 'delivering'.
 */
describe('the completion’s plans, on tables that grew after they were made', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
    await db.query(`INSERT INTO marketplaces (code, name) VALUES ('plans', 'Plans')`);
    await db.query(
      `INSERT INTO webhooks (tenant_kind, tenant_id, marketplace_code, code, name, topic, callback_url, secret_encrypted)
       SELECT 'seller', i::text, 'plans', 'w' || i, 'w', 'order/create', 'http://127.0.0.1:9/', 'x' FROM generate_series(1, 5) i`,
    );
    await seedDeliveries(db, 1, 1, 'delivering');
    await db.query(`UPDATE deliveries SET leased_by = 'plans'`);
  });
  after(async () => {
    await db.close();
  });

  test('the lock and the record read only the batch’s rows', async () => {
    const { rows } = await db.query<{ id: number; webhook_id: number }>(`SELECT id, webhook_id FROM deliveries`);
    const statements = await completionStatements(rows[0]!);
    assert.deepEqual(statements.map((statement) => statement.prepared), [true, true]);
    await rolledBack(
      db,
      async (tx) => {
        // The generic plans made now, on five webhooks and one delivery…
        for (const [i, statement] of statements.entries()) {
          await tx.query(`PREPARE completion_${i} AS ${statement.sql}`);
          await tx.query(`EXPLAIN ${execute(`completion_${i}`, statement.params)}`);
        }
        // …run once every part of the queue and the webhooks are long.
        await seedDeliveries(tx, 10, GROWN, 'delivering');
        await seedDeliveries(tx, 10 + GROWN, GROWN, 'pending');
        await seedDeliveries(tx, 10 + 2 * GROWN, GROWN, 'succeeded');
        await tx.query(
          `INSERT INTO webhooks (tenant_kind, tenant_id, marketplace_code, code, name, topic, callback_url, secret_encrypted)
           SELECT 'seller', i::text, 'plans', 'g' || i, 'w', 'order/create', 'http://127.0.0.1:9/', 'x' FROM generate_series(10, $1::int) i`,
          [GROWN],
        );
        for (const [i, statement] of statements.entries()) {
          const most = busiest(await explain(tx, execute(`completion_${i}`, statement.params)));
          assert.ok(most.rows < 100, `completion statement ${i + 1}: a node read ${most.rows} rows (${most.node})`);
        }
        // The record recorded: its delivery has moved on.
        const { rows: after } = await tx.query<{ status: string }>(`SELECT status FROM deliveries WHERE id = $1`, [rows[0]!.id]);
        assert.equal(after[0]?.status, 'succeeded');
      },
      COMPLETION_SETTINGS,
    );
  });
});
