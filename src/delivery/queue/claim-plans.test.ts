import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Queryable } from '../../db/database.js';
import { createTestDatabase, type TestDatabase } from '../../testing/test-database.js';
import { CLAIM_SETTINGS } from './claim.js';
import { lockDueWebhooks } from './lock-due-webhooks.js';
import { readDueStreams } from './read-due-streams.js';
import { takeRows } from './take-rows.js';

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

type Planning = 'custom' | 'generic';

/** A value as an SQL literal of unknown type, which PostgreSQL casts to the parameter's type. */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  const text = Array.isArray(value)
    ? `{${value.map((element) => (element === null ? 'NULL' : `"${String(element).replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`)).join(',')}}`
    : String(value);
  return `'${text.replaceAll("'", "''")}'`;
}

/**
 * Runs the statement `run` sends under EXPLAIN ANALYZE instead, and returns its plan: planned for its
 * values (custom), or prepared and planned once for any values (generic), as the claim runs it.
 */
async function planOf(db: Queryable, planning: Planning, run: (db: Queryable) => Promise<unknown>): Promise<PlanNode> {
  let plan: PlanNode | undefined;
  await db.exec(CLAIM_SETTINGS);
  await run({
    exec: (sql) => db.exec(sql),
    query: async (sql, params = []) => {
      if (planning === 'custom') plan = (await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params)).rows[0]!['QUERY PLAN'][0].Plan;
      else {
        await db.exec(`SET LOCAL plan_cache_mode = force_generic_plan; DEALLOCATE ALL`);
        await db.query(`PREPARE claim_statement AS ${sql}`);
        // EXECUTE takes its values as SQL text (a utility statement has no parameters of its own).
        plan = (await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE claim_statement(${params.map(literal).join(', ')})`)).rows[0]!['QUERY PLAN'][0].Plan;
        await db.exec(`DEALLOCATE claim_statement; SET LOCAL plan_cache_mode = auto`);
      }
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

  for (const planning of ['custom', 'generic'] as const) {
    test(`lock-due-webhooks visits each webhook with a probe, not its due rows (${planning} plan)`, async () => {
      assertProbes(await db.transaction((tx) => planOf(tx, planning, (q) => lockDueWebhooks(q, { clockOffsetMs: 0, cursor: 0, scan: 200, limit: 100 }))));
    });

    test(`read-due-streams visits each webhook’s streams with a probe each, from the first or after a cursor (${planning} plan)`, async () => {
      await db.transaction(async (tx) => {
        const { webhookIds, now } = await dueWebhooks(tx);
        for (const after of [null, '0', '1']) {
          assertProbes(await planOf(tx, planning, (q) => readDueStreams(q, { now, webhookIds, after: webhookIds.map(() => after), perWebhookLimit: 10 })));
        }
      });
    });

    test(`take-rows finds each quota’s rows with probes (${planning} plan)`, async () => {
      // Rolled back: the rows taken would count as leases in the next read.
      const rolledBack = new Error('rolled back');
      await assert.rejects(
        db.transaction(async (tx) => {
          const { webhookIds, now } = await dueWebhooks(tx);
          const quotas = webhookIds.map((webhookId) => ({ webhookId, key: '1', n: 10 }));
          assertProbes(await planOf(tx, planning, (q) => takeRows(q, { now, workerId: 'plans', leaseSeconds: 60, quotas })));
          throw rolledBack;
        }),
        (error) => error === rolledBack,
      );
    });
  }

  async function dueWebhooks(tx: Queryable): Promise<{ webhookIds: number[]; now: string }> {
    const { rows } = await tx.query<{ ids: number[]; now: string }>(`SELECT array_agg(id ORDER BY id) AS ids, now()::text AS now FROM webhooks`);
    return { webhookIds: rows[0]!.ids, now: rows[0]!.now };
  }

  function assertProbes(plan: PlanNode): void {
    const most = busiest(plan);
    assert.ok(most.rows < 100, `a node handled ${most.rows} rows (${most.node}) for ${WEBHOOKS} webhooks with ${WEBHOOKS * ROWS_PER_WEBHOOK} due rows`);
  }
});
