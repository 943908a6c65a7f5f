import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../config.js';
import { loadKeys, type Keys } from '../keys.js';
import { killAllPlaza, sharedKeyEnv, startPlaza } from '../testing/plaza-process.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import { eventually } from '../testing/wait.js';
import { seedDelivery, seedWebhook, type SeededDelivery } from '../testing/deliveries.js';
import { Receiver } from '../testing/receiver.js';

const PER_WEBHOOK = 3;

/**
 * Several worker processes on one database (the documented way to grow): they claim in parallel,
 * and together every delivery is sent once, no webhook gets more than its limit at once, and each
 * entity's deliveries arrive in order.
 */
describe('a fleet of worker processes', () => {
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
    startPlaza(
      { ...env, DELIVERY_CONCURRENCY: '8', DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: String(PER_WEBHOOK), DELIVERY_TENANT_SHARE: '1', DELIVERY_POLL_INTERVAL_MS: '250' },
      { role: 'worker' },
    );

  test('3 workers: every delivery sent once, per-webhook limit held, per-entity order kept', { timeout: 120_000 }, async () => {
    // Per webhook (its path), the sends open at this moment and the most seen at once.
    const open = new Map<string, number>();
    let most = 0;
    receiver.fallback = (request, response) => {
      const n = (open.get(request.url) ?? 0) + 1;
      open.set(request.url, n);
      most = Math.max(most, n);
      setTimeout(() => {
        open.set(request.url, open.get(request.url)! - 1);
        response.writeHead(200).end();
      }, 5 + Math.floor(Math.random() * 15));
    };
    const created: (SeededDelivery & { entity: string; path: string })[] = [];
    for (let w = 0; w < 6; w++) {
      const path = `/hook${w}`;
      const webhook = await seedWebhook(db, keys, { callbackUrl: receiver.url(path) });
      for (let i = 0; i < 40; i++) {
        // Two entities per webhook: with 3 sends at once, a later delivery of an entity could overtake.
        const entity = `mkt:${w % 2}:${i % 2}`;
        created.push({ ...(await seedDelivery(db, webhook, { now: new Date(), entityKey: entity })), entity, path });
      }
    }
    // Sampled from the start on, not once all three are ready: the first one ready may send much.
    const starting = Promise.all([startWorker(), startWorker(), startWorker()]);
    starting.catch(() => {}); // awaited below
    // The most workers seen holding leases at one moment.
    let holders = 0;
    // Then the counts below say what is missing.
    await eventually(async () => {
      const { rows } = await db.query<{ left: number; holders: number }>(
        `SELECT count(*) FILTER (WHERE status <> 'succeeded')::int AS left, count(DISTINCT leased_by)::int AS holders FROM deliveries`,
      );
      holders = Math.max(holders, rows[0]!.holders);
      return rows[0]!.left === 0;
    }, { timeoutMs: 90_000, maxPauseMs: 20 });
    const workers = await starting;
    await Promise.all(workers.map((worker) => worker.kill('SIGTERM')));

    const { rows } = await db.query<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM deliveries GROUP BY status`);
    assert.deepEqual(rows, [{ status: 'succeeded', n: created.length }]);
    const ids = receiver.requests.map((request) => request.headers['webhook-id']);
    assert.equal(ids.length, created.length, 'no delivery sent twice');
    assert.equal(new Set(ids).size, created.length);
    assert.ok(most <= PER_WEBHOOK, `a webhook had ${most} sends at once`);
    // Per webhook and entity, the order of arrival is the order of creation.
    const arrival = new Map(ids.map((id, index) => [id, index]));
    const byEntity = new Map<string, number[]>();
    for (const delivery of created) {
      const key = `${delivery.path} ${delivery.entity}`;
      byEntity.set(key, [...(byEntity.get(key) ?? []), arrival.get(delivery.messageId)!]);
    }
    for (const [key, order] of byEntity) assert.deepEqual(order, order.toSorted((a, b) => a - b), `${key} arrived out of order`);
    assert.ok(holders >= 2, `the workers held leases at the same time (saw ${holders} at most)`);
  });
});
