/**
 * Notification feed probe (issue 30): the time of one page of the feed (GET …/notifications,
 * 100 items: the settled-horizon transaction and the page's read, as notification-feed.ts runs
 * them) with 1 million notifications kept, from positions spread over the whole feed; and EXPLAIN
 * ANALYZE of the page's read. The target: p99 ≤ 20 ms.
 *
 *   npm run build && DATABASE_URL=postgres://… node dist/bench/probes/feed-page.js [--rows 1000000] [--explain]
 *
 * Layout (a fresh database): one webhook with `rows` deliveries over 10 000 entities, in every
 * state, plus as many for a second webhook interleaved (ids of one webhook are not consecutive).
 */
import type { Queryable } from '../../src/db/database.js';
import { readFeed, settledHorizon } from '../../src/delivery/history/notification-feed.repository.js';
import { createTestDatabase, withAdminClient } from '../../src/testing/test-database.js';

const PAGE = 100;
const ROUNDS = 500;

function argument(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  return at === -1 ? fallback : Number(process.argv[at + 1]);
}

async function seed(db: Queryable, rows: number): Promise<void> {
  await db.query(`INSERT INTO marketplaces (code, name) VALUES ('probe', 'Probe')`);
  await db.query(
    `INSERT INTO webhooks (tenant_kind, tenant_id, marketplace_code, code, name, topic, callback_url, secret_encrypted)
     VALUES ('admin', '*', 'probe', 'feed', 'feed', 'order/create', 'http://127.0.0.1:9/', 'x'),
            ('admin', '*', 'probe', 'other', 'other', 'order/create', 'http://127.0.0.1:9/', 'x')`,
  );
  const body = JSON.stringify({ seller_id: 1, marketplace_connection_id: 1, topic_path: 'order/probe/create', entity_id: 'ORD', payload: { order: { id: 1, status: 'APRO', products: [{ sku: 'SKU-1', quantity: 2, unit_price: 10.5 }] } } });
  await db.query(
    `INSERT INTO events (event_id, marketplace_code, topic, seller_id, entity_id, body, delivery_count, request_hash, created_at)
     SELECT 'e' || n, 'probe', 'order/create', 1, 'ORD-' || (n % 10000), $2::json, 2, 'x', now() - interval '1 day' + n * interval '1 millisecond'
       FROM generate_series(1, $1::int) n`,
    [rows, body],
  );
  // Two deliveries per event, one per webhook, interleaved by id; statuses spread over the states at rest.
  await db.query(
    `INSERT INTO deliveries (event_id, webhook_id, entity_key, message_id, status, next_attempt_at, created_at, updated_at, completed_at, sequence)
     SELECT e.id, w.id, 'probe:1:' || e.entity_id, 'msg_' || e.id || '_' || w.id,
            (ARRAY['succeeded', 'succeeded', 'succeeded', 'failed', 'held', 'superseded'])[1 + e.id % 6], e.created_at, e.created_at, e.created_at,
            CASE WHEN e.id % 6 = 4 THEN NULL ELSE e.created_at END, 1 + e.id / 10000
       FROM events e CROSS JOIN (SELECT id FROM webhooks ORDER BY id) w
      ORDER BY e.id, w.id`,
  );
  await db.exec(`VACUUM ANALYZE`);
}

async function main(): Promise<void> {
  const rows = argument('--rows', 1_000_000);
  const db = await createTestDatabase();
  try {
    const started = performance.now();
    // Millions of rows in a few statements: on a connection of its own, without the pool's timeouts.
    await withAdminClient(db.url, (client) =>
      seed({ query: async (sql, params) => client.query(sql, params as unknown[]) as never, exec: async (sql) => void (await client.query(sql)) }, rows),
    );
    console.log(`seeded ${rows} notifications per webhook (two webhooks) in ${((performance.now() - started) / 1000).toFixed(0)} s`);
    const { rows: [hook] } = await db.query<{ id: number }>(`SELECT id FROM webhooks WHERE code = 'feed'`);
    const { rows: [range] } = await db.query<{ low: number; high: number }>(`SELECT min(id) AS low, max(id) AS high FROM deliveries WHERE webhook_id = $1`, [hook!.id]);
    const times: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const after = Math.floor(Number(range!.low) + Math.random() * (Number(range!.high) - Number(range!.low)));
      const t0 = performance.now();
      const horizon = await settledHorizon(db, hook!.id);
      const page = await readFeed(db, hook!.id, after, horizon, PAGE);
      times.push(performance.now() - t0);
      if (page.length === 0) throw new Error('empty page');
    }
    times.sort((a, b) => a - b);
    const at = (p: number) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))]!.toFixed(2);
    console.log(`feed page of ${PAGE} (settle + read, ${ROUNDS} rounds): median ${at(50)} ms, p99 ${at(99)} ms, max ${times.at(-1)!.toFixed(2)} ms`);
    if (process.argv.includes('--explain')) {
      const { rows: plan } = await db.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)
         SELECT d.id, d.message_id, d.created_at, e.entity_id, d.sequence, e.body->>'topic_path' AS topic_path, e.body::text AS body
           FROM deliveries d JOIN events e ON e.id = d.event_id
          WHERE d.webhook_id = $1 AND d.id > $2 AND d.id <= $3 ORDER BY d.id LIMIT $4`,
        [hook!.id, Number(range!.low) + (Number(range!.high) - Number(range!.low)) / 2, Number(range!.high), PAGE + 1],
      );
      console.log(plan.map((row) => row['QUERY PLAN']).join('\n'));
    }
  } finally {
    await db.close();
  }
}

if (!process.env.DATABASE_URL) {
  console.error('Set DATABASE_URL to a PostgreSQL server (a scratch database is created and dropped).');
  process.exit(2);
}
await main();
