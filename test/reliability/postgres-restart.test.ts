import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { migrate } from '../../src/db/migrate.js';
import { createFreshDatabase, PrivateCluster, type FreshDatabase } from '../../src/testing/fresh-database.js';
import { call, createWebhook, deliveryCounts, login, orderEvent, report, seedTenant } from '../../src/testing/plaza-api.js';
import { killAllPlaza, sharedKeyEnv, startPlaza } from '../../src/testing/plaza-process.js';
import { Receiver } from '../../src/testing/receiver.js';
import { waitFor } from '../../src/testing/wait.js';

const OUTAGE_MS = 5000;
const CONNECT_TIMEOUT_MS = 2000;
// A request may wait for a connection (the configured timeout) and then answer: more is a hang.
const HANG_MS = CONNECT_TIMEOUT_MS + 3000;

let cluster: PrivateCluster | undefined;
let database: FreshDatabase | undefined;
let receiver: Receiver | undefined;
after(async () => {
  await killAllPlaza();
  await receiver?.down();
  await database?.db.close().catch(() => {});
  cluster?.destroy();
});

interface Outcome {
  startedAt: number;
  ms: number;
  status?: number;
  retryAfter?: string | null;
  error?: string;
  entity: string;
}

test('PostgreSQL restarted under intake and delivery load: 503 with Retry-After, recovery within 5 s, every 202 delivered', { timeout: 180_000 }, async () => {
  cluster = await PrivateCluster.create();
  database = await createFreshDatabase(cluster.url);
  await migrate(database.db);
  const seller = await seedTenant(database.db, { sellerId: 1, marketplaceCode: 'MKT' });
  receiver = await Receiver.start();
  const plaza = await startPlaza({ DATABASE_URL: database.url, ...sharedKeyEnv(), DATABASE_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS) });
  const { token } = await login(plaza.url, seller.username, seller.password);
  await createWebhook(plaza.url, token, 'MKT', { code: 'orders', topic: 'order/update', callback_url: receiver.url() });

  const outcomes: Outcome[] = [];
  let stoppedAt = 0;
  let backAt = 0;
  let recoveredMs = 0;
  let stopLoad = false;
  let counter = 0;
  const loader = async () => {
    while (!stopLoad) {
      const entity = `ORD-${counter++}`;
      const startedAt = Date.now();
      const outcome: Outcome = { startedAt, ms: 0, entity };
      outcomes.push(outcome);
      try {
        const response = await call(plaza.url, 'POST', '/v1/MKT/events', { token, body: orderEvent(1, entity, 1), timeoutMs: 30_000 });
        outcome.status = response.status;
        outcome.retryAfter = response.headers.get('retry-after');
      } catch (error) {
        outcome.error = (error as Error).name === 'TimeoutError' ? 'timeout' : String((error as Error).cause ?? error);
      }
      outcome.ms = Date.now() - startedAt;
      // Clients back off a little on 503, as Retry-After asks (shortened here).
      if (outcome.status !== 202) await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  const load = Promise.all([loader(), loader(), loader()]);
  try {
    await runFault(cluster);
  } finally {
    stopLoad = true;
    await load;
  }

  async function runFault(server: PrivateCluster): Promise<void> {
    await waitFor(() => receiver!.requests.length >= 50, { timeoutMs: 30_000, message: 'delivery should be running before the fault' });
    stoppedAt = Date.now();
    server.stop();
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
    server.start();
    backAt = Date.now();
    await waitFor(() => outcomes.some((o) => o.startedAt >= backAt && o.status === 202), { timeoutMs: 5000, message: () => {
      const after = outcomes.filter((o) => o.startedAt >= backAt).map((o) => `+${o.startedAt - backAt}ms ${o.status ?? o.error} in ${o.ms}ms`);
      return `the service recovers by itself within 5 s of PostgreSQL coming back; requests since: ${after.join(', ')}\n${plaza.output().slice(-3000)}`;
    } });
    recoveredMs = Math.min(...outcomes.filter((o) => o.startedAt >= backAt && o.status === 202).map((o) => o.startedAt + o.ms)) - backAt;
    const ready = await call(plaza.url, 'GET', '/readyz');
    assert.equal(ready.status, 200);
    // Load goes on a little after the recovery.
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }

  const duringOutage = outcomes.filter((o) => o.startedAt >= stoppedAt + 500 && o.startedAt < backAt);
  assert.ok(duringOutage.length > 0, 'requests were made during the outage');
  const unavailable = duringOutage.filter((o) => o.status === 503);
  assert.ok(unavailable.length > 0, 'the outage is seen as 503');
  for (const o of unavailable) assert.match(o.retryAfter ?? '', /^[1-9][0-9]*$/, '503 carries Retry-After');
  const statuses = [...new Set(outcomes.map((o) => o.status ?? o.error))];
  assert.ok(outcomes.every((o) => o.status === 202 || o.status === 503), `only 202 or 503, never 500 or a cut connection: ${statuses.join(', ')}`);
  const slowest = Math.max(...outcomes.map((o) => o.ms));
  assert.ok(slowest <= HANG_MS, `no request hangs past the timeout: slowest ${slowest} ms`);

  const accepted = outcomes.filter((o) => o.status === 202).map((o) => o.entity);
  await waitFor(async () => (await deliveryCounts(database!.db)).succeeded === accepted.length, { timeoutMs: 60_000, message: async () => `not all delivered: ${JSON.stringify(await deliveryCounts(database!.db))}` });
  const delivered = new Set(receiver.requests.map((r) => (r.json as { entity_id: string }).entity_id));
  const lost = accepted.filter((entity) => !delivered.has(entity));
  assert.deepEqual(lost, []);
  report('PostgreSQL restart', {
    requests: outcomes.length,
    accepted: accepted.length,
    answered503DuringOutage: unavailable.length,
    outageMs: OUTAGE_MS,
    recoveredMsAfterPostgresBack: recoveredMs,
    slowestRequestMs: slowest,
    duplicates: receiver.duplicates(),
    lost: lost.length,
  });
});
