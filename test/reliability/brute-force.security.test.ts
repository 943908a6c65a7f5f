import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { migrate } from '../../src/db/migrate.js';
import { createFreshDatabase, type FreshDatabase } from '../../src/testing/fresh-database.js';
import { call, inParallel, report, scaled, seedTenant, type ApiResponse } from '../../src/testing/plaza-api.js';
import { killAllPlaza, sharedKeyEnv, startPlaza, type PlazaProcess } from '../../src/testing/plaza-process.js';

// The documented defaults (docs/authentication.md, src/config.ts).
const FREE_PER_USER_IP = 3;
const PER_IP_PER_HOUR = 50;
const BASE_COOLDOWN_SECONDS = 1;

let database: FreshDatabase;
let plaza: PlazaProcess;
let victim: { username: string; password: string };

before(async () => {
  database = await createFreshDatabase();
  await migrate(database.db);
  victim = await seedTenant(database.db, { sellerId: 1, marketplaceCode: 'MKT' });
  // One trusted proxy hop: X-Forwarded-For names the client, so the test speaks from several IPs.
  plaza = await startPlaza({ DATABASE_URL: database.url, ...sharedKeyEnv(), TRUST_PROXY: '1' }, { role: 'api' });
});
after(async () => {
  await killAllPlaza();
  await database?.drop();
});

const attempt = (username: string, password: string, ip: string) => call(plaza.url, 'POST', '/api/v2/auth/login', { body: { username, password }, headers: { 'x-forwarded-for': ip } });

/** Passwords verified in `seconds` under a doubling cooldown: the free ones, then one per doubling. */
const maxVerified = (threshold: number, seconds: number) => threshold + Math.ceil(Math.log2(seconds / BASE_COOLDOWN_SECONDS + 1)) + 1;

function checkRefusals(responses: ApiResponse[]): void {
  for (const response of responses.filter((r) => r.status === 429)) {
    const header = response.headers.get('retry-after') ?? '';
    assert.match(header, /^[1-9][0-9]*$/, 'Retry-After is whole seconds');
    assert.equal((response.json as { retry_after?: number }).retry_after, Number(header), 'the body carries the same figure');
    assert.equal((response.json as { code: string }).code, 'rate_limited');
  }
  const others = responses.filter((r) => r.status !== 401 && r.status !== 429);
  assert.deepEqual(others.map((r) => `${r.status} ${r.text}`), [], 'only 401 or 429');
}

test('1 000 wrong passwords for one user from one IP: progressive cooldowns, few verifications, the real user still logs in from elsewhere', { timeout: 120_000 }, async () => {
  const tries = scaled(1000);
  const startedAt = Date.now();
  const responses = await inParallel(Array.from({ length: tries }, (_, i) => i), 4, () => attempt(victim.username, 'not the password', '203.0.113.10'));
  const seconds = (Date.now() - startedAt) / 1000;
  checkRefusals(responses);
  const verified = responses.filter((r) => r.status === 401).length;
  assert.ok(verified >= FREE_PER_USER_IP, `the free failures are answered 401 (${verified})`);
  assert.ok(verified <= maxVerified(FREE_PER_USER_IP, seconds), `${verified} passwords verified in ${seconds.toFixed(1)} s: more than the cooldowns allow`);
  // The cooldowns grow: a later refusal asks for at least as long as the first one.
  const waits = responses.filter((r) => r.status === 429).map((r) => Number(r.headers.get('retry-after')));
  assert.ok(Math.max(...waits) >= 2 || seconds < 1, `cooldowns grow (${Math.max(...waits)} s)`);
  // The right password from the attacker's IP is refused while the cooldown lasts, without a verification
  // (checked only when the last refusal leaves more than a second: the cooldown may end right now).
  const lastWait = responses.at(-1)!.status === 429 ? Number(responses.at(-1)!.headers.get('retry-after')) : 0;
  const sinceEnd = Date.now() - startedAt - seconds * 1000;
  const fromAttacker = await attempt(victim.username, victim.password, '203.0.113.10');
  if (sinceEnd < (lastWait - 1) * 1000) assert.equal(fromAttacker.status, 429, `the right password from the attacker's IP during a ${lastWait} s cooldown`);
  const real = await attempt(victim.username, victim.password, '198.51.100.20');
  assert.equal(real.status, 200, `the real user from another IP: ${real.text}`);
  report('brute force, one user', { attempts: tries, passwordsVerified: verified, refused429: tries - verified, seconds: Number(seconds.toFixed(1)), longestRetryAfter: Math.max(...waits), realUserFromOtherIp: real.status });
});

test('200 user names sprayed from one IP: the per-IP limit stops the spray, other IPs are unaffected', { timeout: 120_000 }, async () => {
  const names = Array.from({ length: scaled(200) }, (_, i) => `sprayed-user-${i}`);
  const ip = '203.0.113.99';
  const startedAt = Date.now();
  const responses: ApiResponse[] = [];
  for (const name of names) responses.push(await attempt(name, 'Summer2026!', ip));
  const seconds = (Date.now() - startedAt) / 1000;
  checkRefusals(responses);
  const verified = responses.filter((r) => r.status === 401).length;
  const firstRefusal = responses.findIndex((r) => r.status === 429);
  assert.ok(firstRefusal >= PER_IP_PER_HOUR - 1 || firstRefusal === -1, `the first ${PER_IP_PER_HOUR - 1} failures are free (first 429 at ${firstRefusal + 1})`);
  if (names.length > PER_IP_PER_HOUR + 5) assert.ok(firstRefusal !== -1, 'the spray is stopped');
  assert.ok(verified <= maxVerified(PER_IP_PER_HOUR, seconds), `${verified} passwords verified in ${seconds.toFixed(1)} s`);
  // Even a right password from the spraying IP waits; the real user from elsewhere does not.
  assert.equal((await attempt(victim.username, victim.password, ip)).status, names.length > PER_IP_PER_HOUR ? 429 : 200);
  const real = await attempt(victim.username, victim.password, '198.51.100.21');
  assert.equal(real.status, 200, real.text);
  report('password spraying, one IP', { userNames: names.length, passwordsVerified: verified, firstRefusalAt: firstRefusal + 1, seconds: Number(seconds.toFixed(1)), realUserFromOtherIp: real.status });
});

test('a spoofed X-Forwarded-For behind one trusted hop does not reset the limit', { timeout: 60_000 }, async () => {
  // The proxy appends the real client; whatever the client put first is not trusted.
  const statuses: number[] = [];
  for (let i = 0; i < 8; i++) statuses.push((await attempt(victim.username, 'nope nope', `10.0.${i}.1, 203.0.113.77`)).status);
  assert.ok(statuses.slice(FREE_PER_USER_IP).includes(429), `statuses ${statuses.join(',')}`);
});
