import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { Agent, request } from 'undici';
import { migrate } from '../../src/db/migrate.js';
import { createFreshDatabase, type FreshDatabase } from '../../src/testing/fresh-database.js';
import { createWebhook, deliveryCounts, login, orderEvent, report, seedTenant } from '../../src/testing/plaza-api.js';
import { killAllPlaza, sharedKeyEnv, startPlaza } from '../../src/testing/plaza-process.js';
import { Receiver } from '../../src/testing/receiver.js';
import { waitFor } from '../../src/testing/wait.js';

let database: FreshDatabase | undefined;
let receiver: Receiver | undefined;
// One connection per request: a request either reached the server or was refused, never queued on a closing keep-alive socket.
const noKeepAlive = new Agent({ pipelining: 0 });
after(async () => {
  await killAllPlaza();
  await receiver?.down();
  await database?.drop();
  await noKeepAlive.close();
});

interface Outcome {
  startedAt: number;
  status?: number;
  error?: string;
  entity: string;
}

test('SIGTERM under load: in-flight requests and sends complete, nothing stays claimed, nothing is lost', { timeout: 180_000 }, async () => {
  database = await createFreshDatabase();
  await migrate(database.db);
  const seller = await seedTenant(database.db, { sellerId: 1, marketplaceCode: 'MKT' });
  // Slow answers keep sends in flight when the signal comes.
  receiver = await Receiver.start({ delayMs: 1500 });
  const env = { DATABASE_URL: database.url, ...sharedKeyEnv() };
  const plaza = await startPlaza(env);
  const { token } = await login(plaza.url, seller.username, seller.password);
  await createWebhook(plaza.url, token, 'MKT', { code: 'orders', topic: 'order/update', callback_url: receiver.url() });

  const outcomes: Outcome[] = [];
  let stopLoad = false;
  let counter = 0;
  const loader = async () => {
    while (!stopLoad) {
      const entity = `ORD-${counter++}`;
      const outcome: Outcome = { startedAt: Date.now(), entity };
      outcomes.push(outcome);
      try {
        const response = await request(`${plaza.url}/v1/MKT/events`, {
          method: 'POST',
          dispatcher: noKeepAlive,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify(orderEvent(1, entity, 1)),
          headersTimeout: 30_000,
        });
        outcome.status = response.statusCode;
        await response.body.text();
      } catch (error) {
        outcome.error = (error as { code?: string }).code ?? (error as Error).message;
        if (outcome.error === 'ECONNREFUSED') return;
      }
    }
  };
  const load = Promise.all([loader(), loader(), loader(), loader()]);
  try {
    await waitFor(() => receiver!.pending >= 5 && outcomes.length > 50, { timeoutMs: 30_000, message: 'sends should be in flight before the signal' });
  } catch (error) {
    stopLoad = true;
    await load;
    throw error;
  }
  const inFlight = (await database.db.query<{ id: string }>(`SELECT id::text FROM deliveries WHERE status = 'delivering'`)).rows.map((row) => row.id);
  const signalledAt = Date.now();
  plaza.child.kill('SIGTERM');
  const exit = await plaza.exited;
  const shutdownMs = Date.now() - signalledAt;
  stopLoad = true;
  await load;
  assert.equal(exit.code, 0, `exit ${JSON.stringify(exit)}\n${plaza.output().slice(-3000)}`);

  // A request counts as made before the signal once its connection can have been accepted: one
  // started in the last moments before the signal may still be connecting when the listener
  // closes, and a refused or reset connection is then the right answer (the client retries).
  const CONNECT_MARGIN_MS = 200;
  const beforeSignal = outcomes.filter((o) => o.startedAt < signalledAt - CONNECT_MARGIN_MS);
  const cut = beforeSignal.filter((o) => o.status === undefined);
  assert.deepEqual(cut, [], 'every request made before the signal gets an answer');
  assert.ok(beforeSignal.length > 0, 'requests were made before the signal');
  assert.ok(beforeSignal.every((o) => o.status === 202 || o.status === 503), `answers: ${[...new Set(beforeSignal.map((o) => o.status))].join(',')}`);
  const { rows: inFlightNow } = await database.db.query<{ status: string }>(`SELECT status FROM deliveries WHERE id = ANY($1::bigint[])`, [inFlight]);
  assert.equal(inFlightNow.length, inFlight.length);
  assert.ok(inFlightNow.every((row) => row.status === 'succeeded'), `sends in flight at the signal complete: ${inFlightNow.map((r) => r.status).join(',')}`);
  const counts = await deliveryCounts(database.db);
  assert.equal(counts.delivering ?? 0, 0, 'nothing is left claimed');

  // Nothing lost: a new process delivers every accepted event.
  receiver.setDelay(0);
  const accepted = outcomes.filter((o) => o.status === 202).map((o) => o.entity);
  const restarted = await startPlaza(env);
  await waitFor(async () => (await deliveryCounts(database!.db)).succeeded === accepted.length, { timeoutMs: 60_000, message: async () => `not all delivered: ${JSON.stringify(await deliveryCounts(database!.db))}` });
  await restarted.kill('SIGTERM');
  const delivered = new Set(receiver.requests.map((r) => (r.json as { entity_id: string }).entity_id));
  const lost = accepted.filter((entity) => !delivered.has(entity));
  assert.deepEqual(lost, []);
  report('SIGTERM under load', {
    requests: outcomes.length,
    accepted: accepted.length,
    answeredAfterSignal: outcomes.filter((o) => o.startedAt >= signalledAt && o.status !== undefined).length,
    sendsInFlightAtSignal: inFlight.length,
    shutdownMs,
    lost: lost.length,
  });
});
