import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Queryable } from '../../db/database.js';
import { busiest, execute, explain, recordingQueryable, rolledBack, type PlanNode, type RecordedStatement } from '../../testing/query-plans.js';
import { createTestDatabase, type TestDatabase } from '../../testing/test-database.js';
import { CLAIM_SETTINGS } from './claim.js';
import { lockDueWebhooks } from './lock-due-webhooks.js';
import { readDueStreams } from './read-due-streams.js';
import { takeRows } from './take-rows.js';

const WEBHOOKS = 5;
const ROWS_PER_WEBHOOK = 4000;

/** The claim's statements as a claim on every webhook sends them: the lanes, the streams (from the first, and after two cursors), the take. */
async function claimStatements(tx: Queryable): Promise<RecordedStatement[]> {
  const { rows } = await tx.query<{ ids: number[]; now: string }>(`SELECT array_agg(id ORDER BY id) AS ids, now()::text AS now FROM webhooks`);
  const { ids: webhookIds, now } = rows[0]!;
  const statements: RecordedStatement[] = [];
  // What the caller reads back (lock-due-webhooks reads one row).
  const record = (name: string) => recordingQueryable(statements, name, () => ({ rows: [{ now, visited: 0, last: null, due: 0, due_beyond: false, locked: [] }], rowCount: 1 }));
  await lockDueWebhooks(record('lock-due-webhooks'), { clockOffsetMs: 0, cursor: 0, scan: 200, limit: 100 });
  for (const after of [null, '0', '1']) {
    await readDueStreams(record(`read-due-streams after ${after}`), { now, webhookIds, after: webhookIds.map(() => after), perWebhookLimit: 10 });
  }
  const quotas = webhookIds.map((webhookId) => ({ webhookId, key: '1', n: 10 }));
  await takeRows(record('take-rows'), { now, workerId: 'plans', leaseSeconds: 60, quotas });
  return statements;
}

/** The claim's statements that it sends prepared: all three. */
async function preparedStatements(tx: Queryable): Promise<RecordedStatement[]> {
  const prepared = (await claimStatements(tx)).filter((statement) => statement.prepared);
  assert.ok(prepared.length > 0);
  return prepared;
}

/** In a transaction rolled back, with the claim's settings: the rows a take leases stay pending for the next test. */
const claimRolledBack = (db: TestDatabase, work: (tx: Queryable) => Promise<void>) => rolledBack(db, work, CLAIM_SETTINGS);

async function seedWebhooks(db: TestDatabase): Promise<void> {
  await db.query(`INSERT INTO marketplaces (code, name) VALUES ('plans', 'Plans')`);
  await db.query(
    `INSERT INTO webhooks (tenant_kind, tenant_id, marketplace_code, code, name, topic, callback_url, secret_encrypted)
     SELECT 'seller', i::text, 'plans', 'w' || i, 'w', 'order/create', 'http://127.0.0.1:9/', 'x' FROM generate_series(1, $1::int) i`,
    [WEBHOOKS],
  );
}

/** Rows due a minute ago, spread over the webhooks, one seller (stream) '1', each its own entity. */
async function seedDueRows(db: Queryable, from: number, count: number): Promise<void> {
  await db.query(
    `WITH e AS (
       INSERT INTO events (event_id, marketplace_code, topic, seller_id, entity_id, body, delivery_count, request_hash, created_at)
       SELECT 'e' || n, 'plans', 'order/create', 1, n::text, '{}'::json, 1, 'x', now() FROM generate_series($1::int, $1::int + $2::int - 1) n
       RETURNING id
     )
     INSERT INTO deliveries (event_id, webhook_id, entity_key, message_id, status, next_attempt_at, created_at, updated_at, sequence)
     SELECT e.id, w.first + e.id % $3, 'plans:1:' || e.id, 'msg_' || e.id, 'pending', now() - interval '1 minute', now(), now(), 1
       FROM e, (SELECT min(id) AS first FROM webhooks) w`,
    [from, count, WEBHOOKS],
  );
}

function assertProbes(statement: RecordedStatement, plan: PlanNode): void {
  const most = busiest(plan);
  assert.ok(most.rows < 100, `${statement.name}: a node read ${most.rows} rows (${most.node}) for ${WEBHOOKS} webhooks with ${WEBHOOKS * ROWS_PER_WEBHOOK} due rows`);
}

/**
 * The queue's column statistics are often missing or stale: a new installation's queue until
 * autovacuum analyzes it (never, on this machine kind, which runs PostgreSQL without autovacuum), and
 * anywhere the first minute after a burst. The claim's statements must stay probes whatever the
 * planner believes, so that their cost follows the webhooks visited, not the rows waiting. Scenario 4
 * found the due check of lock-due-webhooks planned as a join reading every due row: 7–11 ms a claim
 * instead of 0.4. They run prepared with a generic plan (claim.ts), kept until something invalidates
 * it (the worker's VACUUM of the queue): a plan made while the queue was short must stay a probe when
 * it is long. Scenario 10 found the take's UPDATE reading all 14 000 waiting rows of a partial index
 * that way, and its entity check, made on a short queue, walked the webhook's rows (take-rows.ts).
 */
describe('the claim’s plans with stale statistics', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
    await seedWebhooks(db);
    // A queue never analyzed, vacuumed as the worker does (vacuum.ts): the planner knows how many rows
    // there are, not how many are due.
    await seedDueRows(db, 1, WEBHOOKS * ROWS_PER_WEBHOOK);
    await db.exec(`VACUUM deliveries_queue`);
  });
  after(async () => {
    await db.close();
  });

  test('each statement probes per webhook and stream, planned for its values', async () => {
    await claimRolledBack(db, async (tx) => {
      for (const statement of await claimStatements(tx)) assertProbes(statement, await explain(tx, statement.sql, statement.params));
    });
  });

  test('each prepared statement probes per webhook and stream, with a generic plan', async () => {
    await claimRolledBack(db, async (tx) => {
      await tx.exec(`SET LOCAL plan_cache_mode = force_generic_plan`);
      for (const [i, statement] of (await preparedStatements(tx)).entries()) {
        await tx.query(`PREPARE claim_${i} AS ${statement.sql}`);
        assertProbes(statement, await explain(tx, execute(`claim_${i}`, statement.params)));
      }
    });
  });
});

describe('the claim’s generic plans, made on a short queue and run on a long one', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
    await seedWebhooks(db);
    await seedDueRows(db, 1, WEBHOOKS);
    await db.exec(`VACUUM deliveries_queue`);
  });
  after(async () => {
    await db.close();
  });

  test('each prepared statement still probes per webhook and stream', async () => {
    await claimRolledBack(db, async (tx) => {
      await tx.exec(`SET LOCAL plan_cache_mode = force_generic_plan`);
      const statements = await preparedStatements(tx);
      // Planned now, on one row a webhook (EXPLAIN EXECUTE makes the plan and keeps it)…
      for (const [i, statement] of statements.entries()) {
        await tx.query(`PREPARE claim_${i} AS ${statement.sql}`);
        await tx.query(`EXPLAIN ${execute(`claim_${i}`, statement.params)}`);
      }
      // …and run once the queue is long: nothing has made the plans again.
      await seedDueRows(tx, WEBHOOKS + 1, WEBHOOKS * ROWS_PER_WEBHOOK);
      for (const [i, statement] of statements.entries()) assertProbes(statement, await explain(tx, execute(`claim_${i}`, statement.params)));
    });
  });
});
