import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Queryable } from '../../db/database.js';
import { createTestDatabase, type TestDatabase } from '../../testing/test-database.js';
import { lockDueWebhooks } from './lock-due-webhooks.js';
import { readDueStreams } from './read-due-streams.js';

const WEBHOOKS = 5;
const ROWS_PER_WEBHOOK = 4000;

interface PlanNode {
  'Node Type': string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

/** The plan node that handled the most rows (rows × loops), anywhere in the tree. */
function busiest(node: PlanNode): { rows: number; node: string } {
  const own = { rows: node['Actual Rows'] * node['Actual Loops'], node: `${node['Node Type']}${node['Index Name'] ? ` on ${node['Index Name']}` : ''}` };
  return (node.Plans ?? []).map(busiest).reduce((a, b) => (b.rows > a.rows ? b : a), own);
}

/** Runs the statement `run` sends under EXPLAIN ANALYZE instead, and returns its plan. */
async function planOf(db: Queryable, run: (db: Queryable) => Promise<unknown>): Promise<PlanNode> {
  let plan: PlanNode | undefined;
  await run({
    exec: (sql) => db.exec(sql),
    query: async (sql, params) => {
      const { rows } = await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
      plan = rows[0]!['QUERY PLAN'][0].Plan;
      // What the caller expects back (lock-due-webhooks reads one row): run it for real too.
      return db.query(sql, params);
    },
  });
  return plan!;
}

/**
 * The queue's column statistics are often missing or stale: a new installation's queue until
 * autovacuum analyzes it (never, on this machine kind, which runs PostgreSQL without autovacuum), and
 * anywhere the first minute after a burst. The claim's statements must stay probes whatever the
 * planner believes, so that their cost follows the webhooks visited, not the rows waiting. Scenario 4
 * found the due check of lock-due-webhooks planned as a join reading every due row: 7–11 ms a claim
 * instead of 0.4.
 */
describe('the claim’s plans with stale statistics', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
    await db.query(`INSERT INTO marketplaces (code, name) VALUES ('plans', 'Plans')`);
    await db.query(
      `INSERT INTO webhooks (tenant_kind, tenant_id, marketplace_code, code, name, topic, callback_url, secret_encrypted)
       SELECT 'seller', i::text, 'plans', 'w' || i, 'w', 'order/create', 'http://127.0.0.1:9/', 'x' FROM generate_series(1, $1::int) i`,
      [WEBHOOKS],
    );
    // A queue never analyzed (autovacuum has not got to it), vacuumed as the worker does (vacuum.ts):
    // the planner knows how many rows there are, not how many are due.
    await db.query(
      `WITH e AS (
         INSERT INTO events (event_id, marketplace_code, topic, seller_id, entity_id, body, delivery_count, request_hash, created_at)
         SELECT 'e' || n, 'plans', 'order/create', 1, n::text, '{}'::json, 1, 'x', now() FROM generate_series(1, $1::int) n
         RETURNING id
       )
       INSERT INTO deliveries (event_id, webhook_id, entity_key, message_id, status, next_attempt_at, created_at, updated_at, sequence)
       SELECT e.id, w.first + e.id % $2, 'plans:1:' || e.id, 'msg_' || e.id, 'pending', now() - interval '1 minute', now(), now(), 1
         FROM e, (SELECT min(id) AS first FROM webhooks) w`,
      [WEBHOOKS * ROWS_PER_WEBHOOK, WEBHOOKS],
    );
    await db.exec(`VACUUM deliveries_queue`);
  });
  after(async () => {
    await db.close();
  });

  test('lock-due-webhooks visits each webhook with a probe, not its due rows', async () => {
    assertProbes(await db.transaction((tx) => planOf(tx, (q) => lockDueWebhooks(q, { clockOffsetMs: 0, cursor: 0, scan: 200, limit: 100 }))));
  });

  test('read-due-streams visits each webhook’s streams with a probe each, from the first or after a cursor', async () => {
    await db.transaction(async (tx) => {
      const { rows } = await tx.query<{ ids: number[]; now: string }>(`SELECT array_agg(id ORDER BY id) AS ids, now()::text AS now FROM webhooks`);
      const { ids: webhookIds, now } = rows[0]!;
      for (const after of [null, '0', '1']) {
        assertProbes(await planOf(tx, (q) => readDueStreams(q, { now, webhookIds, after: webhookIds.map(() => after), perWebhookLimit: 10 })));
      }
    });
  });

  function assertProbes(plan: PlanNode): void {
    const most = busiest(plan);
    assert.ok(most.rows < 100, `a node handled ${most.rows} rows (${most.node}) for ${WEBHOOKS} webhooks with ${WEBHOOKS * ROWS_PER_WEBHOOK} due rows`);
  }
});
