import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../config.js';
import { loadKeys, type Keys } from '../keys.js';
import { killAllPlaza, sharedKeyEnv, startPlaza } from '../testing/plaza-process.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import { eventually } from '../testing/wait.js';
import { seedDelivery, seedWebhook } from '../testing/deliveries.js';
import { Receiver } from '../testing/receiver.js';

/**
 * A real worker process killed with SIGKILL in the middle of its sends loses nothing: another worker
 * takes its claims once their lease expires. Two processes share the test's database.
 */
describe('a worker killed mid-delivery', () => {
  let db: TestDatabase;
  // The database and the keys of the worker processes, which the test shares to seed webhooks.
  let env: Record<string, string>;
  let keys: Keys;
  let receiver: Receiver;

  before(async () => {
    db = await createTestDatabase();
    env = { DATABASE_URL: db.url, ...sharedKeyEnv() };
    keys = await loadKeys(loadConfig(env));
    receiver = await Receiver.start();
  });
  after(async () => {
    await killAllPlaza();
    await receiver?.close();
    await db?.close();
  });

  const startWorker = () =>
    startPlaza({ ...env, DELIVERY_LEASE_SECONDS: '5', DELIVERY_POLL_INTERVAL_MS: '250', DELIVERY_RETRY_SCHEDULE: '1s,1s,1s' }, { role: 'worker' });

  test('after SIGKILL and a restart every delivery succeeds and every webhook-id arrives', { timeout: 90_000 }, async () => {
    // Slow answers, so that the kill lands while sends are in flight.
    receiver.fallback = (_request, response) => setTimeout(() => response.writeHead(200).end(), 400);
    const webhook = await seedWebhook(db, keys, { callbackUrl: receiver.url() });
    const created = [];
    for (let i = 0; i < 24; i++) created.push(await seedDelivery(db, webhook, { now: new Date(), entityKey: `entity-${i % 8}` }));

    const first = await startWorker();
    await receiver.waitFor(3);
    await first.kill('SIGKILL');
    const held = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE status = 'delivering'`);
    assert.ok(held.rows[0]!.n > 0, 'the killed worker held claims');

    const second = await startWorker();
    // Then the counts below say what is missing.
    await eventually(async () => {
      const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE status <> 'succeeded'`);
      return rows[0]!.n === 0;
    }, { timeoutMs: 60_000 });
    await second.kill('SIGTERM');

    const { rows } = await db.query<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM deliveries GROUP BY status`);
    assert.deepEqual(rows, [{ status: 'succeeded', n: created.length }]);
    const arrived = new Set(receiver.requests.map((request) => request.headers['webhook-id']));
    for (const delivery of created) assert.ok(arrived.has(delivery.messageId), `${delivery.messageId} arrived`);
    const leftover = await db.query(`SELECT 1 FROM deliveries WHERE leased_by IS NOT NULL`);
    assert.equal(leftover.rowCount, 0);
  });
});
