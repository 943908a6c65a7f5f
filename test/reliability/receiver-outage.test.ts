import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { migrate } from '../../src/db/migrate.js';
import { createFreshDatabase, type FreshDatabase } from '../../src/testing/fresh-database.js';
import { createWebhook, deliveryCounts, inParallel, login, orderEvent, report, scaled, seedTenant, sendEvent } from '../../src/testing/plaza-api.js';
import { killAllPlaza, sharedKeyEnv, startPlaza } from '../../src/testing/plaza-process.js';
import { Receiver } from '../../src/testing/receiver.js';
import { waitFor } from '../../src/testing/wait.js';

const OUTAGE_SECONDS = Number(process.env.PLAZA_RELIABILITY_OUTAGE_SECONDS ?? '30');
const ENTITIES = scaled(40);
const PER_ENTITY = 5;

let database: FreshDatabase | undefined;
let receiver: Receiver | undefined;
after(async () => {
  await killAllPlaza();
  await receiver?.down();
  await database?.drop();
});

test(`a receiver down for ${OUTAGE_SECONDS} s gets everything once it is back, in per-entity order`, { timeout: 180_000 }, async () => {
  database = await createFreshDatabase();
  await migrate(database.db);
  const seller = await seedTenant(database.db, { sellerId: 1, marketplaceCode: 'MKT' });
  receiver = await Receiver.start();
  // Retries that span the outage (1+2+4+8·5 = 47 s) without waiting minutes once it is over.
  const plaza = await startPlaza({ DATABASE_URL: database.url, ...sharedKeyEnv(), DELIVERY_RETRY_SCHEDULE: '1s,2s,4s,8s,8s,8s,8s,8s' });
  const { token } = await login(plaza.url, seller.username, seller.password);
  await createWebhook(plaza.url, token, 'MKT', { code: 'orders', topic: 'order/update', callback_url: receiver.url() });

  // Sequence 1 of every entity while the receiver is up, the rest during the outage.
  const send = (sequence: number) =>
    inParallel(Array.from({ length: ENTITIES }, (_, e) => e), 4, async (e) => {
      const response = await sendEvent(plaza.url, token, 'MKT', orderEvent(1, `ORD-${e}`, sequence, `e${e}-s${sequence}`));
      assert.equal(response.status, 202, response.text);
    });
  await send(1);
  await waitFor(() => receiver!.distinctIds().size === ENTITIES, { timeoutMs: 30_000, message: 'the first round should arrive while the receiver is up' });
  await receiver.down();
  const downAt = Date.now();
  for (let sequence = 2; sequence <= PER_ENTITY; sequence++) await send(sequence);
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, OUTAGE_SECONDS * 1000 - (Date.now() - downAt))));
  const failedDuringOutage = (await database.db.query<{ n: string }>(`SELECT count(*)::text AS n FROM delivery_attempts WHERE status_code IS NULL OR status_code >= 300`)).rows[0]!.n;
  await receiver.up();
  const backAt = Date.now();

  const total = ENTITIES * PER_ENTITY;
  await waitFor(async () => (await deliveryCounts(database!.db)).succeeded === total, { timeoutMs: 60_000, message: async () => `not all delivered: ${JSON.stringify(await deliveryCounts(database!.db))}` });
  const recoverySeconds = (Date.now() - backAt) / 1000;
  assert.equal(receiver.distinctIds().size, total, 'every notification arrives');

  // Per entity, first arrivals come in the order the events were accepted.
  const seen = new Set<string>();
  const order = new Map<string, number[]>();
  for (const request of receiver.requests) {
    if (seen.has(request.webhookId)) continue;
    seen.add(request.webhookId);
    const body = request.json as { entity_id: string; payload: { order: { sequence: number } } };
    order.set(body.entity_id, [...(order.get(body.entity_id) ?? []), body.payload.order.sequence]);
  }
  for (const [entity, sequences] of order) assert.deepEqual(sequences, [1, 2, 3, 4, 5].slice(0, PER_ENTITY), `order of ${entity}`);
  report('receiver outage', { outageSeconds: OUTAGE_SECONDS, notifications: total, failedAttemptsDuringOutage: Number(failedDuringOutage), secondsToDeliverAllAfterBack: recoverySeconds, duplicates: receiver.duplicates(), lost: total - receiver.distinctIds().size });
});
