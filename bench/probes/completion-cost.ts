/**
 * Completion cost probe (issue 10): times completeAttempts, the worker's record of finished
 * attempts, in batches of 100 as the worker sends them under load, on one connection, and splits
 * that cost with two variants that leave a part out (each on a fresh database, alternated):
 * - `as-is`: what the worker does;
 * - `no-fk`: the foreign-key checks off (session_replication_role = replica). A recorded delivery
 *   moves from the queue partition to deliveries_at_rest, and the insert there checks its event
 *   and its webhook again;
 * - `no-headers`: no request headers recorded with the attempts (jsonb, ≈ 250 bytes each).
 *
 *   npm run build && DATABASE_URL=postgres://… node dist/bench/probes/completion-cost.js [rounds]
 *
 * Neither variant is something Plaza could do as it is: they say what each part costs.
 */
import type { Database } from '../../src/db/database.js';
import { openPostgres } from '../../src/db/postgres.js';
import { completeAttempts, type AttemptRecord } from '../../src/delivery/queue/complete.js';
import { createTestDatabase } from '../../src/testing/test-database.js';

const DELIVERIES = 20_000;
const WEBHOOKS = 5;
const BATCH = 100;
const VARIANTS = ['as-is', 'no-fk', 'no-headers'] as const;
type Variant = (typeof VARIANTS)[number];

/** The headers a notification is sent with (sent-headers.ts records them as they are). */
const HEADERS = {
  'content-type': 'application/json',
  'user-agent': 'Plaza-Webhooks/0.1',
  'webhook-id': 'msg_2p7Xx1dQ9hS0kq3vR8mYz4b6NcTe',
  'webhook-timestamp': '1764032400',
  'webhook-signature': 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
};

/** DELIVERIES leased deliveries, five per event as in scenario 4. */
async function seed(db: Database): Promise<void> {
  await db.query(`INSERT INTO marketplaces (code, name) VALUES ('probe', 'Probe')`);
  await db.query(
    `INSERT INTO webhooks (tenant_kind, tenant_id, marketplace_code, code, name, topic, callback_url, secret_encrypted)
     SELECT 'marketplace', 'probe', 'probe', 'w' || i, 'w', 'order/create', 'http://127.0.0.1:9/', 'x' FROM generate_series(1, $1::int) i`,
    [WEBHOOKS],
  );
  await db.query(
    `INSERT INTO events (event_id, marketplace_code, topic, seller_id, entity_id, body, delivery_count, request_hash, created_at)
     SELECT 'e' || n, 'probe', 'order/create', 1, n::text, '{}'::json, $2, 'x', now() FROM generate_series(1, $1::int) n`,
    [DELIVERIES / WEBHOOKS, WEBHOOKS],
  );
  await db.query(
    `INSERT INTO deliveries (event_id, webhook_id, entity_key, message_id, status, next_attempt_at, created_at, updated_at, leased_by, lease_expires_at, sequence)
     SELECT e.id, w.id, e.entity_id, 'msg_' || e.id || '_' || w.id, 'delivering', now(), now(), now(), 'probe', now() + interval '1 hour', e.id
       FROM events e, webhooks w ORDER BY e.id, w.id`,
  );
  await db.exec(`VACUUM ANALYZE`);
}

/** Microseconds per recorded delivery. */
async function run(variant: Variant): Promise<number> {
  const scratch = await createTestDatabase();
  try {
    await seed(scratch);
    if (variant === 'no-fk') await scratch.exec(`DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET session_replication_role = replica', current_database()); END $$`);
    // One connection, opened after the setting: every batch runs on it.
    const db = openPostgres({ connectionString: scratch.url, poolSize: 1, connectTimeoutMs: 3000, statementTimeoutMs: 30_000 });
    try {
      const { rows } = await db.query<{ id: number; webhook_id: number }>(`SELECT id, webhook_id FROM deliveries ORDER BY id`);
      const started = performance.now();
      for (let i = 0; i < rows.length; i += BATCH) {
        const records: AttemptRecord[] = rows.slice(i, i + BATCH).map((row) => ({
          deliveryId: row.id,
          webhookId: row.webhook_id,
          startedAt: new Date(),
          durationMs: 2,
          statusCode: 200,
          error: null,
          responseBody: 'ok',
          requestHeaders: variant === 'no-headers' ? null : HEADERS,
          outcome: { kind: 'succeeded' },
        }));
        const { recorded } = await completeAttempts(db, records, { workerId: 'probe', clockOffsetMs: 0, disableAfterDays: 5 });
        if (recorded.size !== records.length) throw new Error(`only ${recorded.size} of ${records.length} attempts recorded`);
      }
      return ((performance.now() - started) * 1000) / rows.length;
    } finally {
      await db.close();
    }
  } finally {
    await scratch.close();
  }
}

if (!process.env.DATABASE_URL) {
  console.error('Set DATABASE_URL to a PostgreSQL server (a scratch database is created and dropped).');
  process.exit(2);
}
const rounds = Number(process.argv[2] ?? 3);
const times = new Map<Variant, number[]>(VARIANTS.map((variant) => [variant, []]));
for (let round = 0; round < rounds; round++) for (const variant of VARIANTS) times.get(variant)!.push(await run(variant));
console.log(`Recording ${DELIVERIES} deliveries' attempts in batches of ${BATCH}, one connection (${rounds} alternated rounds):`);
for (const [variant, values] of times) {
  const sorted = [...values].sort((a, b) => a - b);
  console.log(`  ${variant.padEnd(10)} median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} µs per delivery (all: ${values.map((v) => v.toFixed(1)).join(', ')})`);
}
