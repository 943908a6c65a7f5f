import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { PortalClient } from '../testing/webhook-history.js';
import { seedConnection, seedUser } from '../testing/fixtures.js';
import { plainMessage } from './views/form-errors.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** The field's message element and the control that names it (aria-describedby, aria-invalid). */
function fieldError(body: string, id: string): string | undefined {
  const control = new RegExp(`id="${id}"[^>]*aria-describedby="[^"]*${id}-error[^"]*"[^>]*aria-invalid="true"|id="${id}"[^>]*aria-invalid="true"[^>]*aria-describedby="[^"]*${id}-error`);
  if (!control.test(body)) return undefined;
  return new RegExp(`<p class="error" id="${id}-error">([^]*?)</p>`).exec(body)?.[1];
}

describe('portal forms: every field\'s problem at once, in plain words', () => {
  let ctx: TestContext;
  let portal: PortalClient;
  const post = (url: string, fields: Record<string, string>) => portal.post(url, fields);
  const count = async () => Number((await ctx.db.query<{ n: string }>(`SELECT count(*) AS n FROM webhooks`)).rows[0]!.n);

  before(async () => {
    ctx = await createTestApp();
    await seedConnection(ctx.db, 1, 'MKT');
    await seedUser(ctx.db, { username: 'forms-mkt', password: 'market-pass-1', role: 'marketplace', marketplaceCode: 'MKT', sellerId: 1 });
    portal = await PortalClient.signIn(ctx, 'forms-mkt', 'market-pass-1', 'MKT');
  });
  after(() => ctx.close());

  test('a create with three bad fields (and bad header lines) answers every message at once, none in the API\'s words', async () => {
    const before = await count();
    const response = await post('/portal/MKT/webhooks/new', {
      code: 'has spaces', name: 'Orders', topic: 'order/create', callback_url: 'erp.example/orders', seller_id: '999', headers: 'no colon here\nX-Ok: 1\nnor here', filter: '',
    });
    assert.equal(response.statusCode, 400, response.body);
    assert.equal(await count(), before);
    const body = response.body;
    assert.equal(fieldError(body, 'f-code'), 'Code: use 1–100 letters, digits, - or _, without spaces');
    assert.equal(fieldError(body, 'f-callback_url'), 'Callback URL: enter the full address, starting with https://');
    assert.equal(fieldError(body, 'f-seller_id'), 'Seller: seller 999 is not connected to MKT: enter a connected seller&#39;s number, or *');
    assert.equal(fieldError(body, 'f-headers'), 'Headers: lines 1, 3: write each header as Name: value');
    assert.equal(fieldError(body, 'f-name'), undefined);
    // The summary names the four problems, each a link to its field.
    assert.match(body, /Please correct these 4 problems:/);
    for (const id of ['f-code', 'f-callback_url', 'f-seller_id', 'f-headers']) assert.match(body, new RegExp(`<li><a href="#${id}">`));
    assert.doesNotMatch(body, /body\.\w+|must match pattern|must be 1 to 100 ASCII/);
    // What was typed is kept.
    assert.match(body, /value="has spaces"/);
  });

  test('a filter that is not JSON and a too long name come back together with the service\'s problems', async () => {
    const response = await post('/portal/MKT/webhooks/new', { code: 'ok', name: 'n'.repeat(401), topic: 'order/status_change', status_code: 'A B', callback_url: 'https://erp.example/h', seller_id: '*', filter: '{' });
    assert.equal(response.statusCode, 400, response.body);
    assert.match(fieldError(response.body, 'f-name') ?? '', /^Name: use at most 400 characters$/);
    assert.match(fieldError(response.body, 'f-status_code') ?? '', /^Order status: use 1–32 letters, digits or _, like APRO$/);
    assert.match(fieldError(response.body, 'f-filter') ?? '', /^Filter: /);
    assert.match(response.body, /Please correct these 3 problems:/);
  });

  test('an edit reports every field too, and a valid one still saves', async () => {
    const created = await post('/portal/MKT/webhooks/new', { code: 'orders', name: 'Orders', topic: 'order/create', callback_url: 'https://erp.example/h', seller_id: '*' });
    assert.equal(created.statusCode, 201, created.body);
    const refused = await post('/portal/MKT/webhooks/orders/edit', { name: ' ', callback_url: 'ftp://erp.example/h', seller_id: 'x', delivery_mode: 'all', filter: '{"payload.x": {"$bogus": 1}}' });
    assert.equal(refused.statusCode, 400);
    assert.equal(fieldError(refused.body, 'f-name'), 'Name: give the webhook a name');
    assert.equal(fieldError(refused.body, 'f-callback_url'), 'Callback URL: the address must start with https:// (or http://)');
    assert.equal(fieldError(refused.body, 'f-seller_id'), 'Seller: enter * for every seller, or one seller&#39;s number');
    assert.match(fieldError(refused.body, 'f-filter') ?? '', /^Filter: at payload\.x\.\$bogus, unknown operator/);
    const saved = await post('/portal/MKT/webhooks/orders/edit', { name: 'Orders 2', callback_url: 'https://erp.example/h2', seller_id: '1', delivery_mode: 'all' });
    assert.equal(saved.statusCode, 303, saved.body);
  });

  test('the replay form names its three problems in one answer', async () => {
    const response = await post('/portal/MKT/webhooks/orders/replay', { mode: 'count', since: 'yesterday', until: '2026-13-45T99:00' });
    assert.equal(response.statusCode, 400, response.body);
    const alert = /<div class="alert error" role="alert"><p>([^<]*)<\/p>/.exec(response.body)?.[1] ?? '';
    assert.equal(alert, 'Status: tick failed, succeeded or both · Created from (UTC): enter a date and time, like 2026-01-31 12:00 · Created before (UTC): enter a date and time, like 2026-01-31 12:00');
  });

  test('the sign-in form shows both empty fields on their fields', async () => {
    const response = await ctx.app.inject({ method: 'POST', url: '/portal/login', headers: { ...FORM, host: 'plaza.test', origin: 'http://plaza.test' }, payload: 'username=&password=' });
    assert.equal(response.statusCode, 400);
    assert.equal(fieldError(response.body, 'username'), 'User name: enter your user name');
    assert.equal(fieldError(response.body, 'password'), 'Password: enter your password');
  });

  test('a message the map does not know keeps the API\'s words after the label', () => {
    assert.equal(plainMessage({ field: 'body.headers.X-A', message: 'header "X-A" is given twice (names ignore case)' }), 'Headers: header "X-A" is given twice (names ignore case)');
    assert.equal(plainMessage({ field: 'body.code', message: 'must NOT have more than 200 characters' }), 'Code: use at most 200 characters');
  });
});
