import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Receiver } from '../testing/receiver.js';
import { vetHost } from '../delivery/dispatch/ssrf-guard.js';
import { parseNetworks } from '../net/address-policy.js';
import { accessTokenFor, bearer, seedConnection, seedUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';

// `localhost` and every name under it are this machine's loopback (RFC 6761). They used to be
// accepted at create, then blocked at every send and retried for 47 hours.
const LOCALHOST_CALLBACKS = [
  'http://localhost/hook',
  'http://localhost:8080/hook',
  'http://LOCALHOST./hook',
  'https://localhost:8443/hook',
  'http://api.localhost/hook',
  'http://a.b.Localhost:9/hook',
  'http://127.0.0.1.localhost/hook',
  'http://169.254.169.254.localhost./latest/meta-data/',
];
// Names that only look like it are other hosts, checked when they are resolved.
const NOT_LOCALHOST = ['http://localhost.example.com/hook', 'http://notlocalhost/hook', 'http://localhostx/hook', 'http://localhost-api.example/hook'];

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const host = 'plaza.test';
const origin = `http://${host}`;

describe('callbacks to localhost names, with no network allowed (the default)', () => {
  let ctx: TestContext;
  let headers: { authorization: string };
  before(async () => {
    ctx = await createTestApp({ WEBHOOK_ALLOWED_NETWORKS: '' });
    await seedConnection(ctx.db, 1, 'MKT');
    headers = bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { username: 'lh-seller', password: 'seller-pass-1', sellerId: 1 })));
  });
  after(() => ctx.close());

  let counter = 0;
  const create = (callback_url: string) =>
    ctx.app.inject({ method: 'POST', url: '/v1/MKT/webhooks', headers, payload: { code: `lh-${++counter}`, name: 'n', topic: 'order/create', callback_url } });

  test('are refused at create like 127.0.0.1, on the callback_url field', async () => {
    for (const url of ['http://127.0.0.1/hook', ...LOCALHOST_CALLBACKS]) {
      const response = await create(url);
      assert.equal(response.statusCode, 400, `${url}: ${response.body}`);
      const body = response.json() as { code: string; errors: { field: string; message: string }[] };
      assert.equal(body.code, 'validation_failed');
      assert.deepEqual(body.errors.map((e) => e.field), ['body.callback_url'], url);
      assert.match(body.errors[0]!.message, /must not point to a loopback address/, url);
    }
    const { rows } = await ctx.db.query(`SELECT 1 FROM webhooks`);
    assert.equal(rows.length, 0);
  });

  test('names that only look like localhost are accepted (resolved and checked at send)', async () => {
    for (const url of NOT_LOCALHOST) assert.equal((await create(url)).statusCode, 201, url);
  });

  test('are refused at update, and the webhook keeps its callback', async () => {
    const created = await create('https://erp.example.com/hook');
    assert.equal(created.statusCode, 201);
    const code = (created.json() as { code: string }).code;
    for (const url of LOCALHOST_CALLBACKS) {
      const response = await ctx.app.inject({ method: 'PATCH', url: `/v1/MKT/webhooks/${code}`, headers, payload: { callback_url: url } });
      assert.equal(response.statusCode, 400, `${url}: ${response.body}`);
    }
    const read = await ctx.app.inject({ url: `/v1/MKT/webhooks/${code}`, headers });
    assert.equal((read.json() as { callback_url: string }).callback_url, 'https://erp.example.com/hook');
  });

  test('are refused by the portal form, which says why', async () => {
    const login = await ctx.app.inject({ method: 'POST', url: '/portal/login', headers: { ...FORM, host, origin }, payload: 'username=lh-seller&password=seller-pass-1' });
    assert.equal(login.statusCode, 303, login.body);
    const cookie = String(login.headers['set-cookie']).split(';')[0]!;
    const form = await ctx.app.inject({ url: '/portal/MKT/webhooks/new', headers: { host, cookie } });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)![1]!;
    const post = (url: string, fields: Record<string, string>) =>
      ctx.app.inject({ method: 'POST', url, headers: { ...FORM, host, cookie, origin }, payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString() });
    const refused = await post('/portal/MKT/webhooks/new', { code: 'portal-lh', name: 'n', topic: 'order/create', callback_url: 'http://localhost:3000/hook' });
    assert.equal(refused.statusCode, 400, refused.body);
    assert.match(refused.body, /Callback URL: Plaza does not send to loopback addresses like localhost/);
    const created = await post('/portal/MKT/webhooks/new', { code: 'portal-lh', name: 'n', topic: 'order/create', callback_url: 'https://erp.example.com/hook' });
    assert.equal(created.statusCode, 201, created.body);
    const edited = await post('/portal/MKT/webhooks/portal-lh/edit', { name: 'n', callback_url: 'http://api.localhost/hook', seller_id: '1', headers: '' });
    assert.equal(edited.statusCode, 400, edited.body);
    assert.match(edited.body, /Callback URL: Plaza does not send to loopback addresses like api\.localhost/);
  });

  test('at send, a localhost name is never looked up: a resolver answering a public address does not open it', async () => {
    const lying = async () => ['93.184.216.34'];
    for (const name of ['localhost', 'LOCALHOST.', 'evil.localhost']) {
      await assert.rejects(vetHost(name, [], lying), /blocked address 127\.0\.0\.1 \(loopback\) for /, name);
    }
    assert.equal(await vetHost('localhost.example.com', [], lying), '93.184.216.34');
  });
});

describe('callbacks to localhost names when loopback is allowed (WEBHOOK_ALLOWED_NETWORKS)', () => {
  test('localhost is allowed exactly when a loopback address it stands for is, and reaches that address', async () => {
    assert.equal(await vetHost('localhost', parseNetworks('127.0.0.1/32')), '127.0.0.1');
    assert.equal(await vetHost('api.localhost', parseNetworks('::1/128')), '::1');
    assert.equal(await vetHost('localhost', parseNetworks('::1/128, 127.0.0.0/8')), '127.0.0.1');
    await assert.rejects(vetHost('localhost', parseNetworks('127.0.0.2/32, 10.0.0.0/8')), /blocked address/);
  });

  test('create accepts it under 127.0.0.1/32 and a test notification reaches the receiver through it; 127.0.0.2/32 does not open it', async () => {
    const receiver = await Receiver.start();
    const allowing = await createTestApp({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' });
    const other = await createTestApp({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.2/32' });
    try {
      for (const ctx of [allowing, other]) await seedConnection(ctx.db, 1, 'MKT');
      const tokenFor = async (ctx: TestContext) => bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { sellerId: 1 })));
      const payload = { code: 'via-localhost', name: 'n', topic: 'order/create', callback_url: `http://localhost:${receiver.port}/hook` };
      const headers = await tokenFor(allowing);
      const created = await allowing.app.inject({ method: 'POST', url: '/v1/MKT/webhooks', headers, payload });
      assert.equal(created.statusCode, 201, created.body);
      const tested = await allowing.app.inject({ method: 'POST', url: '/v1/MKT/webhooks/via-localhost/test', headers });
      assert.equal(tested.statusCode, 200, tested.body);
      assert.equal((tested.json() as { success: boolean }).success, true, tested.body);
      assert.equal(receiver.requests.length, 1);
      const refused = await other.app.inject({ method: 'POST', url: '/v1/MKT/webhooks', headers: await tokenFor(other), payload });
      assert.equal(refused.statusCode, 400, refused.body);
    } finally {
      await allowing.close();
      await other.close();
      await receiver.close();
    }
  });
});
