import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import { buildApp, type App } from '../app.js';
import { createLogger } from '../logging.js';
import { loadConfig } from '../config.js';
import { generateKeys } from '../keys.js';
import { ManualClock } from '../clock.js';
import { seedConnection, seedUser } from '../testing/fixtures.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';

/** Everything the app logs at trace level, as one string. */
let logged = '';
let app: App;
let db: TestDatabase;

before(async () => {
  const sink = new Writable({ write: (chunk, _encoding, done) => ((logged += String(chunk)), done()) });
  // The process logger itself (redaction and serializers), writing to the sink.
  const logger = createLogger({ LOG_LEVEL: 'trace', LOG_FORMAT: 'json' }, { stream: sink, isTTY: false });
  db = await createTestDatabase();
  app = await buildApp({ config: loadConfig({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8' }), db, keys: await generateKeys(), clock: new ManualClock(new Date()), logger });
  await app.ready();
});
after(async () => {
  await app.close();
  await db.close();
});

test('passwords, tokens, refresh tokens, Authorization headers and webhook secrets never reach the logs', async () => {
  await seedConnection(db, 1, 'mkt');
  const user = await seedUser(db, { username: 'logged-user', password: 'Sup3r-secret-passw0rd', sellerId: 1 });
  const failed = await app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username: user.username, password: 'Wr0ng-secret-passw0rd' } });
  assert.equal(failed.statusCode, 401);
  const login = await app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username: user.username, password: user.password } });
  assert.equal(login.statusCode, 200);
  const { token, refresh_token } = login.json() as { token: string; refresh_token: string };
  const refreshed = await app.inject({ method: 'POST', url: '/api/v2/auth/refresh', payload: { refresh_token } });
  assert.equal(refreshed.statusCode, 200);
  const created = await app.inject({
    method: 'POST',
    url: '/v1/mkt/webhooks',
    headers: { authorization: `Bearer ${token}` },
    payload: { code: 'w1', name: 'W', topic: 'order/create', callback_url: 'http://127.0.0.1:9/hook', headers: { 'X-Api-Key': 'receiver-key-123' } },
  });
  assert.equal(created.statusCode, 201);
  const { secret } = created.json() as { secret: string };

  assert.ok(logged.includes('"url":"/api/v2/auth/login"'), 'requests are logged at all');
  for (const value of [user.password, 'Wr0ng-secret-passw0rd', token, refresh_token, (refreshed.json() as { refresh_token: string }).refresh_token, secret]) {
    assert.equal(logged.includes(value), false, `the log holds a secret: ${value.slice(0, 12)}…`);
  }
  assert.equal(/bearer /i.test(logged), false, 'no Authorization header value is logged');
});

test("a database error's detail, which quotes the row it refused, is not logged (a password hash, say)", async () => {
  await seedConnection(db, 2, 'mkt2');
  const error = await db
    .query(`INSERT INTO users (username, password_hash, seller_id) VALUES ('', '$argon2id$quoted-hash-value', 2)`)
    .then(() => undefined, (caught: unknown) => caught);
  assert.match(String((error as { detail?: string }).detail), /quoted-hash-value/, 'PostgreSQL quotes the row');
  app.log.error({ err: error }, 'database error');
  assert.ok(logged.includes('violates check constraint'), 'the error itself is logged');
  assert.equal(logged.includes('quoted-hash-value'), false);
});

test('a portal link\'s one-time token and credentials put in a query string are not logged', async () => {
  const token = 'one-time-portal-token-0123456789abcdefghij';
  await app.inject({ url: `/portal/link/${token}` });
  await app.inject({ url: '/api/v2/products?access_token=query-borne-token-value&limit=1' });
  assert.ok(logged.includes('/portal/link/[redacted]'), 'the request line is there, its token replaced');
  assert.ok(logged.includes('access_token=[redacted]&limit=1'), 'other query values stay');
  for (const value of [token, 'query-borne-token-value']) assert.equal(logged.includes(value), false, value);
});

test('however the URL spells them: a percent-encoded path to a portal link, and credential names such as x-api-key, jwt or key', async () => {
  const token = 'encoded-path-portal-token-0123456789abcdef';
  const link = await app.inject({ url: `/portal/%6cink/${token}` });
  assert.equal(link.statusCode, 200, 'the router reads it as /portal/link/…');
  const secrets = ['xapikey-value-1', 'jwt-value-2', 'key-value-3', 'authorization-value-4', 'encoded-name-value-5'];
  await app.inject({ url: `/api/v2/products?x-api-key=${secrets[0]}&jwt=${secrets[1]}&key=${secrets[2]}&authorization=${secrets[3]}&%61pi_key=${secrets[4]}&limit=1` });
  for (const value of [token, ...secrets]) assert.equal(logged.includes(value), false, value);
  assert.ok(logged.includes('x-api-key=[redacted]') && logged.includes('limit=1'));
});
