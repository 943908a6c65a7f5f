import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Principal } from '../accounts/principal.js';
import type { Queryable } from '../db/database.js';
import { busiest, execute, explain, recordingQueryable, rolledBack, type PlanNode, type RecordedStatement } from '../testing/query-plans.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import type { EventBody } from './event-schema.js';
import { createDeliveries, insertEvent } from './events.repository.js';
import { readIntakeChecks } from './intake-checks.js';
import { replaceSnapshot } from './snapshots/snapshots.repository.js';
import { matchingTopics } from './envelope.js';

/** The fan-out's webhooks: the event's marketplace, topic and seller. */
const MATCHING = 5;
/** Webhooks of the fan-out added last, for an event that reaches many. */
const MANY = 2_000;
/** What the tables grow to: events and snapshots of the seller, webhooks, sellers and connections elsewhere. */
const GROWN = 20_000;

const principal: Principal = { userId: 1, sessionId: 's', sellerId: 1, role: 'seller', marketplaceCode: null, tokenId: 't' };

/**
 * The intake's statements as an event of a new entity sends them, with their values: the checks,
 * the event, the snapshot (the update that finds none, then the insert) and the fan-out; then a
 * status change's checks and fan-out.
 */
async function intakeStatements(): Promise<RecordedStatement[]> {
  const statements: RecordedStatement[] = [];
  // What each caller reads back: the snapshot's update finds no row, so the insert follows.
  const record = (name: string) =>
    recordingQueryable(statements, name, (sql) => (sql.trimStart().startsWith('UPDATE entity_snapshots') ? { rows: [], rowCount: 0 } : { rows: [{ id: 1, count: MATCHING, latest: false }], rowCount: 1 }));
  const event = { event_id: 'new', topic: 'order/create', seller_id: 1, entity_id: 'new', order: { reference_order: 'new' } } as unknown as EventBody;
  const now = new Date();
  await readIntakeChecks(record('checks'), principal, 'plans', event, 'new');
  await insertEvent(record('event'), { eventId: 'new', marketplaceCode: 'plans', topic: 'order/create', sellerId: 1, entityId: 'new', requestHash: 'x', createdBy: null, createdByApiKey: null, now });
  await replaceSnapshot(record('snapshot'), { marketplaceCode: 'plans', sellerId: 1, kind: 'order', entityId: 'new' }, { snapshot: {}, state: 'new' }, now);
  // Event row 0 here: the test runs it with the id of an event it inserted.
  await createDeliveries(record('fan-out'), { eventRowId: 0, marketplaceCode: 'plans', sellerId: 1, entityKey: 'plans:1:new', topics: ['order/create'], now, clockOffsetMs: 0, body: '{}' });
  // A status change reaches two topics: its own and the status entered's.
  const change = { event_id: 'paid', topic: 'order/status_change', state_to: 'paid', seller_id: 1, entity_id: 'new', order: { reference_order: 'new' } } as unknown as EventBody;
  await readIntakeChecks(record('status change checks'), principal, 'plans', change, 'paid');
  const topics = matchingTopics('order/status_change', 'paid');
  await createDeliveries(record('status change fan-out'), { eventRowId: 0, marketplaceCode: 'plans', sellerId: 1, entityKey: 'plans:1:new', topics, now, clockOffsetMs: 0, body: '{}' });
  return statements;
}

/** One marketplace 'plans', seller 1 connected to it, and the fan-out's webhooks (the seller's own). */
async function seedWorld(db: Queryable): Promise<void> {
  await db.query(`INSERT INTO marketplaces (code, name) VALUES ('plans', 'Plans')`);
  await db.query(`INSERT INTO sellers (id, name) VALUES (1, 'one')`);
  await db.query(`INSERT INTO marketplace_connections (seller_id, marketplace_code) VALUES (1, 'plans')`);
  await db.query(
    `INSERT INTO webhooks (tenant_kind, tenant_id, marketplace_code, code, name, topic, callback_url, secret_encrypted)
     SELECT 'seller', '1', 'plans', 'w' || i, 'w', 'order/create', 'http://127.0.0.1:9/', 'x' FROM generate_series(1, $1::int) i`,
    [MATCHING],
  );
}

/**
 * What an installation accumulates: the seller's events and their entities' snapshots, other
 * marketplaces with their sellers, connections and webhooks, and the seller's marketplace's webhooks
 * of other topics. None of it is the fan-out's or the checks' business: a plan that reads it is a scan.
 */
async function grow(db: Queryable): Promise<void> {
  await db.query(
    `INSERT INTO events (event_id, marketplace_code, topic, seller_id, entity_id, body, delivery_count, request_hash, created_at)
     SELECT 'old-' || i, 'plans', 'order/create', 1, 'old-' || i, NULL, 0, 'x', now() FROM generate_series(1, $1::int) i`,
    [GROWN],
  );
  await db.query(
    `INSERT INTO entity_snapshots (marketplace_code, seller_id, kind, entity_id, snapshot, state, updated_at)
     SELECT 'plans', 1, 'order', 'old-' || i, '{}', 'new', now() FROM generate_series(1, $1::int) i`,
    [GROWN],
  );
  await db.query(`INSERT INTO marketplaces (code, name) SELECT 'm' || i, 'm' FROM generate_series(1, 100) i`);
  await db.query(`INSERT INTO sellers (id, name) SELECT i, 's' FROM generate_series(2, $1::int) i`, [GROWN]);
  await db.query(`INSERT INTO marketplace_connections (seller_id, marketplace_code) SELECT i, 'm' || (i % 100 + 1) FROM generate_series(2, $1::int) i`, [GROWN]);
  await db.query(
    `INSERT INTO webhooks (tenant_kind, tenant_id, marketplace_code, code, name, topic, callback_url, secret_encrypted)
     SELECT 'seller', i::text, CASE WHEN i % 4 = 0 THEN 'plans' ELSE 'm' || (i % 100 + 1) END, 'g' || i, 'g',
            CASE WHEN i % 8 = 0 THEN 'publication/update' WHEN i % 4 = 0 THEN 'order/status_change/entered_s' || i % 50 ELSE 'order/create' END,
            'http://127.0.0.1:9/', 'x'
       FROM generate_series(2, $1::int) i`,
    [GROWN],
  );
}

/** The marketplace's webhooks of the status-change family that grow() adds: subscribed to other statuses. */
const OTHER_STATUSES = GROWN / 8;

/**
 * Under 100 rows in any step; a status change, which reaches two topics, may read its marketplace's
 * webhooks of the family (its generic plan filters them by the topics: TOPIC_FAMILY in
 * events.repository.ts), and nothing beyond them.
 */
function assertProbes(statement: RecordedStatement, plan: PlanNode): void {
  const most = busiest(plan);
  const how = statement.prepared ? 'prepared, its generic plan made on short tables' : 'planned at its run';
  const bound = statement.name.startsWith('status change') ? OTHER_STATUSES + 100 : 100;
  assert.ok(most.rows < bound, `${statement.name} (${how}): a node read ${most.rows} rows (${most.node}) with ${GROWN} events, snapshots, sellers and webhooks`);
}

/**
 * An intake statement sent prepared gets a generic plan once PostgreSQL finds it costs no more than
 * planning each run, and keeps it until something invalidates it (an ANALYZE or VACUUM of a table it
 * reads, a migration). A plan made on a new installation's short tables is kept as they grow:
 * autovacuum, where it runs at all (not on this machine kind), analyzes a table only after a share of
 * its rows changed. On a few rows a scan costs no more than a probe, so each statement must read only
 * what the event is about once the tables are long, whether planned at each run or prepared with a
 * plan made while they were short. The checks and the fan-out match webhooks by the marketplace and
 * the topic's family (events.repository.ts, TOPIC_FAMILY): with the topics' `= ANY($n)` alone, their
 * generic plans made on a new installation searched by the marketplace and filtered the topics,
 * reading every webhook of the marketplace (5 005 rows here) at each event.
 */
describe('the intake’s plans, on tables that grew after the first events', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
    await seedWorld(db);
  });
  after(async () => {
    await db.close();
  });

  test('each statement reads only what the event is about', async () => {
    await rolledBack(db, async (tx) => {
      const statements = await intakeStatements();
      assert.deepEqual(statements.map((statement) => statement.name), ['checks', 'event', 'snapshot', 'snapshot', 'fan-out', 'status change checks', 'status change fan-out']);
      // The prepared ones planned now, on the short tables (EXPLAIN EXECUTE makes the generic plan and keeps it)…
      await tx.exec(`SET LOCAL plan_cache_mode = force_generic_plan`);
      for (const [i, statement] of statements.entries()) {
        if (!statement.prepared) continue;
        await tx.query(`PREPARE intake_${i} AS ${statement.sql}`);
        await tx.query(`EXPLAIN ${execute(`intake_${i}`, statement.params)}`);
      }
      // …and every one run once the tables are long: nothing has made the generic plans again.
      await grow(tx);
      // The fan-out's event, which its deliveries reference.
      const { rows } = await tx.query<{ id: number }>(
        `INSERT INTO events (event_id, marketplace_code, topic, seller_id, entity_id, delivery_count, request_hash, created_at)
         VALUES ('fanned', 'plans', 'order/create', 1, 'fanned', 0, 'x', now()) RETURNING id`,
      );
      for (const [i, statement] of statements.entries()) {
        const params = statement.name.endsWith('fan-out') ? [rows[0]!.id, ...statement.params.slice(1)] : statement.params;
        await tx.exec(`SET LOCAL plan_cache_mode = ${statement.prepared ? 'force_generic_plan' : 'force_custom_plan'}`);
        const plan = statement.prepared ? await explain(tx, execute(`intake_${i}`, params)) : await explain(tx, statement.sql, params);
        assertProbes(statement, plan);
      }
      // An event that reaches many webhooks, 2 000 more, each with a filter it matched: its fan-out's
      // plan, made on five, reads no more than twice as many rows in a step (a nested loop over a scan
      // of the webhooks, say, would read them all for each), and looks the matched ids up in a hash
      // (not the array, once per webhook).
      const { rows: many } = await tx.query<{ id: number }>(
        `INSERT INTO webhooks (tenant_kind, tenant_id, marketplace_code, code, name, topic, callback_url, secret_encrypted, filter)
         SELECT 'seller', '1', 'plans', 'many' || i, 'w', 'order/create', 'http://127.0.0.1:9/', 'x', '{}' FROM generate_series(1, $1::int) i
         RETURNING id`,
        [MANY],
      );
      const i = statements.findIndex((statement) => statement.name === 'fan-out');
      const params = [rows[0]!.id, ...statements[i]!.params.slice(1, 8), many.map((webhook) => webhook.id), ...statements[i]!.params.slice(9)];
      await tx.exec(`SET LOCAL plan_cache_mode = force_generic_plan`);
      const plan = await explain(tx, execute(`intake_${i}`, params));
      const most = busiest(plan);
      assert.ok(most.rows <= 2 * (MATCHING + MANY), `fan-out to ${MATCHING + MANY} webhooks: a node read ${most.rows} rows (${most.node})`);
      // PostgreSQL 15 writes it "(hashed SubPlan 3)", 17 "(ANY (id = (hashed SubPlan 3).col1))".
      assert.match(JSON.stringify(plan), /\(filter IS NULL\) OR \((ANY \(id = \()?hashed SubPlan \d+/, 'the fan-out looks the matched filters up in a hash');
    });
  });
});
