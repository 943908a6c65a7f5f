/**
 * Claim cost probe (issue 10): times claimDueDeliveries, the whole claim transaction, against a
 * large backlog and many webhooks, and prints EXPLAIN ANALYZE of each of its statements.
 *
 *   npm run build && DATABASE_URL=postgres://… node dist/bench/probes/claim-cost.js [--explain] [--no-analyze]
 *
 * Layouts (each on a fresh database):
 * - backlog:   100 000 due deliveries on 100 webhooks of 10 tenants, 9 900 more webhooks idle;
 * - webhooks:  10 000 webhooks of 1 000 tenants, each with 10 due deliveries (every webhook has work,
 *              the claim's worst case: its skip scan visits every webhook with waiting rows).
 * Each claim takes 100 rows (DELIVERY_CONCURRENCY 100, share 0.5), which are then recorded as sent.
 */
import pino from 'pino';
import type { Database, Queryable, QueryOptions } from '../../src/db/database.js';
import { claimDueDeliveries, type ClaimRequest } from '../../src/delivery/queue/claim.js';
import { recoverExpiredLeases } from '../../src/delivery/queue/recover-expired-leases.js';
import { QueueVacuum } from '../../src/delivery/queue/vacuum.js';
import { createTestDatabase } from '../../src/testing/test-database.js';

interface Layout {
  name: string;
  webhooks: number;
  tenants: number;
  busyWebhooks: number;
  deliveries: number;
}

const LAYOUTS: Layout[] = [
  { name: '100 000 due deliveries, 10 000 webhooks (100 busy)', webhooks: 10_000, tenants: 10, busyWebhooks: 100, deliveries: 100_000 },
  { name: '10 000 webhooks all with due work, 100 000 due deliveries', webhooks: 10_000, tenants: 1_000, busyWebhooks: 10_000, deliveries: 100_000 },
];
const ROUNDS = 30;

async function seed(db: Queryable, layout: Layout): Promise<void> {
  await db.query(`INSERT INTO marketplaces (code, name) VALUES ('probe', 'Probe')`);
  // Busy webhooks first (ids 1..busy), spread over the tenants; the rest are idle.
  await db.query(
    `INSERT INTO webhooks (tenant_kind, tenant_id, marketplace_code, code, name, topic, callback_url, secret_encrypted)
     SELECT 'seller', (1 + i % $2)::text, 'probe', 'w' || i, 'w', 'order/create', 'http://127.0.0.1:9/', 'x'
       FROM generate_series(0, $1::int - 1) i`,
    [layout.webhooks, layout.tenants],
  );
  await db.query(
    `INSERT INTO events (event_id, marketplace_code, topic, seller_id, entity_id, body, delivery_count, request_hash, created_at)
     SELECT 'e' || n, 'probe', 'order/create', 1, n::text, '{}'::json, 1, 'x', now() FROM generate_series(1, $1::int) n`,
    [layout.deliveries],
  );
  await db.query(
    `INSERT INTO deliveries (event_id, webhook_id, entity_key, message_id, status, next_attempt_at, created_at, updated_at, sequence)
     SELECT e.id, w.first + e.id % $1, e.entity_id, 'msg_' || e.id, 'pending', now() - interval '1 minute', now(), now(), e.id
       FROM events e, (SELECT min(id) AS first FROM webhooks) w`,
    [layout.busyWebhooks],
  );
  // --no-analyze: the planner's view of a table that just grew (autovacuum has not analyzed it yet).
  // Otherwise the state a worker keeps the queue in: vacuumed (QueueVacuum) and analyzed.
  if (!process.argv.includes('--no-analyze')) {
    await db.exec(`VACUUM ANALYZE deliveries_queue`);
    await db.exec(`ANALYZE`);
  }
}

/** Runs each statement of the claim under EXPLAIN ANALYZE inside a savepoint, before it runs for real. */
function explaining(db: Database, plans: string[]): Database {
  const explain = async (tx: Queryable, sql: string, params?: readonly unknown[]) => {
    await tx.query('SAVEPOINT probe');
    const { rows } = await tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${sql}`, params);
    await tx.query('ROLLBACK TO SAVEPOINT probe');
    plans.push(`${sql.trim().split('\n')[0]!.slice(0, 80)} …\n${rows.map((row) => row['QUERY PLAN']).join('\n')}`);
  };
  return {
    ...db,
    transaction: (work) =>
      db.transaction((tx) =>
        work({
          ...tx,
          query: async <Row>(sql: string, params?: readonly unknown[], queryOptions?: QueryOptions) => {
            await explain(tx, sql, params);
            return tx.query<Row>(sql, params, queryOptions);
          },
        }),
      ),
  };
}

/**
 * Each claim's rows are then recorded as sent, as a worker would: the next claim takes the next due
 * rows (3 000 of the 100 000 in 30 rounds). Giving the same rows back instead would make every
 * round update the same 100 rows again, whose version chains then grow by two per round: that
 * measures the chains, not the claim.
 */
async function finish(db: Queryable, ids: number[]): Promise<void> {
  await db.query(`UPDATE deliveries SET status = 'succeeded', leased_by = NULL, lease_expires_at = NULL, completed_at = now() WHERE id = ANY($1::bigint[])`, [ids]);
}

async function probe(layout: Layout, explain: boolean): Promise<void> {
  const db = await createTestDatabase();
  try {
    if (process.argv.includes('--no-analyze')) {
      await db.exec(`ALTER TABLE deliveries_queue SET (autovacuum_enabled = false); ALTER TABLE deliveries_at_rest SET (autovacuum_enabled = false);
                     ALTER TABLE events SET (autovacuum_enabled = false)`);
    }
    await seed(db, layout);
    const options: ClaimRequest = {
      workerId: 'probe', clockOffsetMs: 0, leaseSeconds: 60, free: 100, concurrency: 100, perWebhookLimit: 10, tenantShare: 0.5, scanWebhooks: 200,
      position: { webhookCursor: 0, streamCursors: new Map() },
    };
    const vacuum = new QueueVacuum(db, pino({ level: 'silent' }));
    const times: number[] = [];
    let claimed = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const started = performance.now();
      // Expired leases are looked for at most once a second, as the worker does: here in the first round.
      if (round === 0) await recoverExpiredLeases(db, 0);
      const { deliveries } = await claimDueDeliveries(db, options);
      times.push(performance.now() - started);
      claimed = deliveries.length;
      await finish(db, deliveries.map((delivery) => delivery.id));
      // As the worker does: a VACUUM of the queue in the background every 2 000 finished deliveries.
      for (const _ of deliveries) vacuum.noteFinished();
    }
    times.sort((a, b) => a - b);
    const at = (p: number) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))]!.toFixed(2);
    console.log(`${layout.name}: claim of ${claimed} rows (whole transaction, ${ROUNDS} rounds): median ${at(50)} ms, p90 ${at(90)} ms, min ${times[0]!.toFixed(2)} ms`);
    if (explain) {
      const plans: string[] = [];
      await claimDueDeliveries(explaining(db, plans), options);
      console.log(plans.join('\n\n'));
    }
  } finally {
    await db.close();
  }
}

if (!process.env.DATABASE_URL) {
  console.error('Set DATABASE_URL to a PostgreSQL server (a scratch database is created and dropped).');
  process.exit(2);
}
const explain = process.argv.includes('--explain');
for (const layout of LAYOUTS) await probe(layout, explain);
