import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { migrate } from '../../src/db/migrate.js';
import { createFreshDatabase, type FreshDatabase } from '../../src/testing/fresh-database.js';
import { call, createWebhook, login, orderEvent, report, seedTenant, sendEvent, type ApiResponse } from '../../src/testing/plaza-api.js';
import { killAllPlaza, sharedKeyEnv, startPlaza, type PlazaProcess } from '../../src/testing/plaza-process.js';
import { Receiver } from '../../src/testing/receiver.js';
import { waitFor } from '../../src/testing/wait.js';

let database: FreshDatabase;
let plaza: PlazaProcess;
let receiverA: Receiver;
let receiverB: Receiver;
const tokens: Record<'a' | 'b' | 'other', string> = { a: '', b: '', other: '' };
let deliveryId = '';

before(async () => {
  database = await createFreshDatabase();
  await migrate(database.db);
  const a = await seedTenant(database.db, { sellerId: 1, marketplaceCode: 'MKT' });
  const b = await seedTenant(database.db, { sellerId: 2, marketplaceCode: 'MKT' });
  const other = await seedTenant(database.db, { sellerId: 3, marketplaceCode: 'OTHER', role: 'marketplace' });
  receiverA = await Receiver.start();
  receiverB = await Receiver.start();
  plaza = await startPlaza({ DATABASE_URL: database.url, ...sharedKeyEnv() });
  tokens.a = (await login(plaza.url, a.username, a.password)).token;
  tokens.b = (await login(plaza.url, b.username, b.password)).token;
  tokens.other = (await login(plaza.url, other.username, other.password)).token;
  await createWebhook(plaza.url, tokens.a, 'MKT', { code: 'a-hook', topic: 'order/update', callback_url: receiverA.url(), headers: { 'X-Secret-Of-A': 'a-private-value' } });
  await createWebhook(plaza.url, tokens.b, 'MKT', { code: 'b-hook', topic: 'order/update', callback_url: receiverB.url() });
  assert.equal((await sendEvent(plaza.url, tokens.a, 'MKT', orderEvent(1, 'A-0', 1))).status, 202);
  await waitFor(() => receiverA.requests.length === 1, { timeoutMs: 30_000, message: 'the first delivery of A arrives' });
  const list = await call(plaza.url, 'GET', '/v1/MKT/webhooks/a-hook/deliveries', { token: tokens.a });
  assert.equal(list.status, 200, list.text);
  const items = (Array.isArray(list.json) ? list.json : (list.json as { items?: unknown[]; data?: unknown[] }).items ?? (list.json as { data?: unknown[] }).data ?? []) as { id: string | number }[];
  deliveryId = String(items[0]!.id);
});
after(async () => {
  await killAllPlaza();
  await receiverA?.down();
  await receiverB?.down();
  await database?.drop();
});

const BODIES: Record<string, unknown> = {
  'PATCH /v1/{marketplace_code}/webhooks/{code}': { name: 'hijacked', callback_url: 'https://attacker.example/steal' },
  'POST /v1/{marketplace_code}/webhooks/{code}/replay': { since: new Date(Date.now() - 3_600_000).toISOString() },
  'POST /v1/{marketplace_code}/portal-links': { seller_id: 1 },
  'POST /v1/{marketplace_code}/webhooks/filter-test': { filter: { 'payload.order.status': 'APRO' }, notification: { payload: { order: { status: 'APRO' } } } },
};

/** What a response tells, with the names the caller itself typed and the request id taken out. */
function told(response: ApiResponse, names: Record<string, string>): string {
  let text = response.text;
  for (const [placeholder, value] of Object.entries(names)) text = text.split(value).join(placeholder);
  return `${response.status} ${text.replace(/"request_id":"[^"]*"/, '')}`;
}

test('tenancy matrix: on every endpoint with {marketplace_code} or {code}, another seller and another marketplace get 404/403 and learn nothing', { timeout: 120_000 }, async () => {
  const document = (await call(plaza.url, 'GET', '/openapi.json')).json as { paths: Record<string, Record<string, unknown>> };
  const operations = Object.entries(document.paths)
    .filter(([path]) => path.includes('{marketplace_code}') || path.includes('{code}'))
    .flatMap(([path, ops]) => Object.keys(ops).map((method) => ({ method: method.toUpperCase(), path })))
    // Creating a webhook and sending events are checked below: they name no existing resource.
    .filter(({ method, path }) => !(method === 'POST' && (path.endsWith('/webhooks') || path.endsWith('/events'))));
  assert.ok(operations.length >= 9, `the document lists the tenant endpoints (${operations.length})`);

  const failures: string[] = [];
  let requests = 0;
  // Mutating calls go last, so that a wrongly allowed DELETE cannot hide a wrongly allowed GET.
  const rank = (method: string) => ({ GET: 0, POST: 1, PATCH: 2, DELETE: 3 })[method] ?? 1;
  operations.sort((x, y) => rank(x.method) - rank(y.method));
  for (const intruder of ['b', 'other'] as const) {
    for (const { method, path } of operations) {
      // The list without {code} is B's own list (checked below); another marketplace may not even list.
      if (intruder === 'b' && !path.includes('{code}')) continue;
      const url = (code: string, id: string) => path.replace('{marketplace_code}', 'MKT').replace('{code}', code).replace('{id}', id);
      const body = BODIES[`${method} ${path}`];
      const options = { token: tokens[intruder], ...(body ? { body } : {}) };
      const foreign = await call(plaza.url, method, url('a-hook', deliveryId), options);
      const missing = await call(plaza.url, method, url('zz-missing', '987654321'), options);
      requests += 2;
      const label = `${intruder} ${method} ${path}`;
      if (foreign.status !== 404 && foreign.status !== 403) failures.push(`${label}: ${foreign.status} ${foreign.text.slice(0, 200)}`);
      else if (told(foreign, { '<code>': 'a-hook', '<id>': deliveryId }) !== told(missing, { '<code>': 'zz-missing', '<id>': '987654321' })) {
        failures.push(`${label}: answers differ for a foreign and a missing resource:\n  ${foreign.text}\n  ${missing.text}`);
      }
      for (const secret of ['a-private-value', receiverA.url(), 'whsec_']) if (foreign.text.includes(secret)) failures.push(`${label}: leaks ${secret}`);
    }
  }

  // Lists never show another tenant's webhooks; another marketplace's list is closed.
  const listB = await call(plaza.url, 'GET', '/v1/MKT/webhooks', { token: tokens.b });
  assert.equal(listB.status, 200);
  assert.deepEqual((listB.json as { code: string }[]).map((w) => w.code), ['b-hook']);
  const listOther = await call(plaza.url, 'GET', '/v1/MKT/webhooks', { token: tokens.other });
  assert.ok([403, 404].includes(listOther.status), `another marketplace's list: ${listOther.status}`);
  // Events for another seller are refused.
  for (const intruder of ['b', 'other'] as const) {
    const event = await sendEvent(plaza.url, tokens[intruder], 'MKT', orderEvent(1, 'FORGED-1', 1));
    assert.ok([403, 404].includes(event.status), `${intruder} sending an event of seller 1: ${event.status}`);
  }
  // A seller may subscribe only to its own events; creating the same code in its own tenant reveals nothing.
  const steal = await call(plaza.url, 'POST', '/v1/MKT/webhooks', { token: tokens.b, body: { code: 'b-steal', name: 'x', topic: 'order/update', callback_url: receiverB.url(), seller_id: '1' } });
  assert.equal(steal.status, 403, steal.text);
  const otherCreate = await call(plaza.url, 'POST', '/v1/MKT/webhooks', { token: tokens.other, body: { code: 'o-hook', name: 'x', topic: 'order/update', callback_url: receiverB.url() } });
  assert.ok([403, 404].includes(otherCreate.status), `another marketplace creating on MKT: ${otherCreate.status}`);

  // A's webhook and delivery came through untouched.
  const own = await call(plaza.url, 'GET', '/v1/MKT/webhooks/a-hook', { token: tokens.a });
  assert.equal(own.status, 200);
  assert.equal((own.json as { name: string }).name, 'a-hook');
  assert.equal((own.json as { callback_url: string }).callback_url, receiverA.url());
  const { rows } = await database.db.query<{ attempts: number }>(`SELECT attempts FROM deliveries WHERE id = $1`, [deliveryId]);
  assert.equal(rows[0]!.attempts, 1, 'no intruder could retry A\'s delivery');
  assert.equal(receiverA.requests.length, 1, 'no intruder could send a test or replay to A\'s receiver');
  assert.deepEqual(failures, []);
  report('tenancy matrix', { endpoints: operations.length, intruders: 2, requests, leaks: failures.length });
});

test('events of seller A never reach a webhook of seller B', { timeout: 60_000 }, async () => {
  const before = { a: receiverA.requests.length, b: receiverB.requests.length };
  for (let i = 1; i <= 5; i++) {
    assert.equal((await sendEvent(plaza.url, tokens.a, 'MKT', orderEvent(1, `A-${i}`, 1))).status, 202);
    assert.equal((await sendEvent(plaza.url, tokens.b, 'MKT', orderEvent(2, `B-${i}`, 1))).status, 202);
  }
  await waitFor(() => receiverA.requests.length === before.a + 5 && receiverB.requests.length === before.b + 5, { timeoutMs: 30_000, message: 'both sellers get their own events' });
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const sellersAtB = new Set(receiverB.requests.map((r) => (r.json as { seller_id: number }).seller_id));
  const sellersAtA = new Set(receiverA.requests.map((r) => (r.json as { seller_id: number }).seller_id));
  assert.deepEqual([...sellersAtB], [2]);
  assert.deepEqual([...sellersAtA], [1]);
  report('seller isolation of events', { eventsPerSeller: 5, crossDeliveries: receiverB.requests.filter((r) => (r.json as { seller_id: number }).seller_id !== 2).length });
});
