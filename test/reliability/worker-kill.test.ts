import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { migrate } from '../../src/db/migrate.js';
import { createFreshDatabase, type FreshDatabase } from '../../src/testing/fresh-database.js';
import { createWebhook, deliveryCounts, inParallel, login, orderEvent, report, scaled, seedTenant, sendEvent } from '../../src/testing/plaza-api.js';
import { killAllPlaza, sharedKeyEnv, startPlaza } from '../../src/testing/plaza-process.js';
import { Receiver } from '../../src/testing/receiver.js';
import { waitFor } from '../../src/testing/wait.js';

const WEBHOOKS = 10;
const EVENTS = scaled(500); // × 10 webhooks = 5 000 deliveries at scale 1

let database: FreshDatabase | undefined;
let receiver: Receiver | undefined;
after(async () => {
  await killAllPlaza();
  await receiver?.down();
  await database?.drop();
});

test('a worker SIGKILLed with deliveries in flight loses none after a restart; duplicates stay within what was in flight', { timeout: 180_000 }, async () => {
  database = await createFreshDatabase();
  await migrate(database.db);
  const seller = await seedTenant(database.db, { sellerId: 1, marketplaceCode: 'MKT' });
  // A receiver slow enough that many sends are in flight when the worker dies.
  receiver = await Receiver.start({ delayMs: 20 });
  const env = { DATABASE_URL: database.url, ...sharedKeyEnv() };

  const api = await startPlaza(env, { role: 'api' });
  const { token } = await login(api.url, seller.username, seller.password);
  for (let i = 0; i < WEBHOOKS; i++) await createWebhook(api.url, token, 'MKT', { code: `hook${i}`, topic: 'order/update', callback_url: `${receiver.url()}?w=${i}` });
  const accepted = await inParallel(Array.from({ length: EVENTS }, (_, i) => i), 8, async (i) => {
    const response = await sendEvent(api.url, token, 'MKT', orderEvent(1, `ORD-${i}`, 1));
    assert.equal(response.status, 202, response.text);
    return (response.json as { deliveries: number }).deliveries;
  });
  const total = accepted.reduce((sum, n) => sum + n, 0);
  assert.equal(total, EVENTS * WEBHOOKS);

  const worker = await startPlaza(env, { role: 'worker' });
  await waitFor(() => receiver!.requests.length >= total / 3, { timeoutMs: 60_000, message: () => `only ${receiver!.requests.length} of ${total} arrived before the kill` });
  await worker.kill('SIGKILL');
  const deliveredBeforeKill = receiver.requests.length;
  const inFlight = (await deliveryCounts(database.db)).delivering ?? 0;
  assert.ok(inFlight > 0, 'the kill should catch sends in flight');

  const restarted = await startPlaza(env, { role: 'worker' });
  await waitFor(async () => (await deliveryCounts(database!.db)).succeeded === total, { timeoutMs: 120_000, message: () => `not all delivered after the restart: ${receiver!.distinctIds().size}/${total}` });
  await restarted.kill('SIGTERM');

  const { rows } = await database.db.query<{ message_id: string }>(`SELECT message_id FROM deliveries`);
  const expected = new Set(rows.map((row) => row.message_id));
  const received = receiver.distinctIds();
  const missing = [...expected].filter((id) => !received.has(id));
  assert.deepEqual(missing, [], 'every webhook-id arrives at least once');
  assert.equal(received.size, total);
  assert.ok(receiver.duplicates() <= inFlight, `duplicates ${receiver.duplicates()} exceed the ${inFlight} in flight at the kill`);
  report('worker SIGKILL', { deliveries: total, deliveredBeforeKill, inFlightAtKill: inFlight, duplicates: receiver.duplicates(), lost: missing.length });
});
