import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { migrate } from '../../src/db/migrate.js';
import { createFreshDatabase, type FreshDatabase } from '../../src/testing/fresh-database.js';
import { call, createWebhook, deliveryCounts, inParallel, login, orderEvent, report, scaled, seedTenant, sendEvent } from '../../src/testing/plaza-api.js';
import { killAllPlaza, sharedKeyEnv, startPlaza, type PlazaProcess } from '../../src/testing/plaza-process.js';
import { Receiver } from '../../src/testing/receiver.js';
import { waitFor } from '../../src/testing/wait.js';

const EVENTS = scaled(1000);
const WEBHOOKS = 3;

let database: FreshDatabase;
let receiver: Receiver | undefined;
let apis: PlazaProcess[] = [];
let env: Record<string, string>;

before(async () => {
  database = await createFreshDatabase();
  await migrate(database.db);
  receiver = await Receiver.start();
  // TRUST_PROXY=1: X-Forwarded-For names the client, so the tests can speak from several IPs.
  env = { DATABASE_URL: database.url, ...sharedKeyEnv(), TRUST_PROXY: '1' };
  apis = await Promise.all([startPlaza(env, { role: 'api' }), startPlaza(env, { role: 'api' })]);
  await Promise.all([startPlaza(env, { role: 'worker' }), startPlaza(env, { role: 'worker' })]);
});

after(async () => {
  await killAllPlaza();
  await receiver?.down();
  await database?.drop();
});

test('two API and two worker processes on one PostgreSQL deliver each notification exactly once', { timeout: 180_000 }, async () => {
  const seller = await seedTenant(database.db, { sellerId: 1, marketplaceCode: 'MKT' });
  const { token } = await login(apis[0]!.url, seller.username, seller.password);
  for (let i = 0; i < WEBHOOKS; i++) await createWebhook(apis[i % 2]!.url, token, 'MKT', { code: `hook${i}`, topic: 'order/update', callback_url: `${receiver!.url()}?w=${i}` });
  // Events go to both API processes; a few entities get several events (ordered delivery across workers).
  const accepted = await inParallel(Array.from({ length: EVENTS }, (_, i) => i), 8, async (i) => {
    const response = await sendEvent(apis[i % 2]!.url, token, 'MKT', orderEvent(1, `ORD-${i % 200}`, Math.floor(i / 200) + 1, `ev-${i}`));
    assert.equal(response.status, 202, response.text);
    return (response.json as { deliveries: number }).deliveries;
  });
  const total = accepted.reduce((sum, n) => sum + n, 0);
  assert.equal(total, EVENTS * WEBHOOKS);
  await waitFor(async () => (await deliveryCounts(database.db)).succeeded === total, { timeoutMs: 120_000, message: async () => `not all delivered: ${JSON.stringify(await deliveryCounts(database.db))}` });
  // A late duplicate would arrive after the rows say succeeded: give it a moment to show up.
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(receiver!.requests.length, total, 'exactly once: no duplicate without a fault');
  assert.equal(receiver!.distinctIds().size, total);
  report('two APIs + two workers', { deliveries: total, received: receiver!.requests.length, duplicates: receiver!.duplicates() });
});

test('the login limit holds across both API processes', { timeout: 60_000 }, async () => {
  const user = await seedTenant(database.db, { sellerId: 2, marketplaceCode: 'MKT' });
  const ip = '203.0.113.50';
  const statuses: number[] = [];
  // Alternate the processes: if each counted alone, twice as many failures would pass.
  for (let attempt = 0; attempt < 8; attempt++) {
    const response = await call(apis[attempt % 2]!.url, 'POST', '/api/v2/auth/login', { body: { username: user.username, password: 'wrong password!' }, headers: { 'x-forwarded-for': ip } });
    statuses.push(response.status);
  }
  const free = 3; // LOGIN_FREE_FAILURES_PER_USER_IP default
  assert.deepEqual(statuses.slice(0, free), Array(free).fill(401), `statuses ${statuses.join(',')}`);
  assert.ok(statuses.slice(free).filter((s) => s === 429).length >= statuses.length - free - 2, `after ${free} failures the limit refuses on both processes: ${statuses.join(',')}`);
  // The right password is refused too while cooling down, on the process that saw fewer failures.
  const right = await call(apis[1]!.url, 'POST', '/api/v2/auth/login', { body: { username: user.username, password: user.password }, headers: { 'x-forwarded-for': ip } });
  assert.equal(right.status, 429, right.text);
  assert.match(right.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/);
  report('login limit across processes', { attempts: statuses.length, statuses: statuses.join(',') });
});

test('a refresh-token reuse seen by one API process revokes the tokens for both', { timeout: 60_000 }, async () => {
  const user = await seedTenant(database.db, { sellerId: 3, marketplaceCode: 'MKT' });
  const [a, b] = apis as [PlazaProcess, PlazaProcess];
  const first = await login(a.url, user.username, user.password, '198.51.100.1');
  const other = await login(b.url, user.username, user.password, '198.51.100.2');
  const rotated = await call(a.url, 'POST', '/api/v2/auth/refresh', { body: { refresh_token: first.refresh_token } });
  assert.equal(rotated.status, 200, rotated.text);
  const successor = (rotated.json as { refresh_token: string }).refresh_token;
  // The thief replays the rotated token on the other process.
  const replay = await call(b.url, 'POST', '/api/v2/auth/refresh', { body: { refresh_token: first.refresh_token } });
  assert.equal(replay.status, 401, replay.text);
  for (const [proc, token] of [[a, successor], [b, successor], [a, other.refresh_token], [b, other.refresh_token]] as const) {
    const response = await call(proc.url, 'POST', '/api/v2/auth/refresh', { body: { refresh_token: token } });
    assert.equal(response.status, 401, `after the reuse every refresh token of the user is revoked (${response.status})`);
  }
  const { rows } = await database.db.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM refresh_tokens WHERE user_id = $1 AND (revoked_at IS NULL OR revoked_reason NOT IN ('rotated', 'security_breach_token_reuse'))`,
    [user.id],
  );
  assert.equal(rows[0]!.n, '0');
});
