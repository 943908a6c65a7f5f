import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Receiver } from '../testing/receiver.js';
import { accessTokenFor, bearer, seedConnection, seedUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { HOST, PortalClient } from '../testing/webhook-history.js';

/**
 * The history is read by the owner and the admins, kept for the audit retention and backed up: no
 * secret may reach it. Not the signing secrets, not header values (receivers' credentials), not the
 * path or query of a callback URL (where Slack- or Discord-style receivers keep their token).
 */
describe('webhook history holds no secret', () => {
  let ctx: TestContext;
  let receiver: Receiver;
  let seller: { authorization: string };
  let admin: { authorization: string };
  const leaks: string[] = [];

  before(async () => {
    ctx = await createTestApp({ ACCESS_TOKEN_TTL_SECONDS: '86400' });
    receiver = await Receiver.start();
    await seedConnection(ctx.db, 1, 'MKT');
    await seedUser(ctx.db, { username: 'sec-h-seller', password: 'seller-pass-1', sellerId: 1 });
    seller = bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { sellerId: 1 })));
    admin = bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { role: 'admin', sellerId: 1 })));
  });
  after(async () => {
    await receiver.close();
    await ctx.close();
  });

  const historySectionOf = (page: string) => {
    const start = page.search(/<h2>History<\/h2>|<table class="history">/);
    assert.ok(start > 0, 'the page shows the history');
    return page.slice(start);
  };
  const api = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object, who = seller) => {
    const response = await ctx.app.inject({ method, url, headers: { ...who, host: HOST }, ...(payload === undefined ? {} : { payload }) });
    assert.ok(response.statusCode < 300, `${method} ${url}: ${response.statusCode} ${response.body}`);
    return response;
  };

  test('no signing secret, header value, or callback path or query in any row, API answer or portal page', async () => {
    const hook = '/v1/MKT/webhooks/secretive';
    const created = await api('POST', '/v1/MKT/webhooks', {
      code: 'secretive', name: 'S', topic: 'order/create',
      callback_url: receiver.url('/path-token-aaa111/in?token=query-token-aaa111'),
      headers: { Authorization: 'Bearer header-value-aaa111', 'X-Api-Key': 'header-value-bbb222' },
    });
    leaks.push(created.json<{ secret: string }>().secret, 'header-value-aaa111', 'header-value-bbb222', 'path-token-aaa111', 'query-token-aaa111');

    await api('PATCH', hook, { headers: { Authorization: 'Bearer header-value-ccc333' }, callback_url: receiver.url('/path-token-ccc333?token=query-token-ccc333') });
    leaks.push('header-value-ccc333', 'path-token-ccc333', 'query-token-ccc333');
    for (let i = 0; i < 2; i++) leaks.push((await api('POST', `${hook}/rotate-secret`)).json<{ secret: string }>().secret);
    await api('POST', `${hook}/test`);
    assert.equal(receiver.requests.at(-1)?.headers.authorization, 'Bearer header-value-ccc333', 'the test sent the header: it is a value the history must not keep');

    const portal = await PortalClient.signIn(ctx, 'sec-h-seller', 'seller-pass-1', 'MKT');
    const edit = await portal.post('/portal/MKT/webhooks/secretive/edit', {
      name: 'S2', callback_url: receiver.url('/path-token-ddd444?token=query-token-ddd444'), headers: 'X-Api-Key: header-value-ddd444',
    });
    assert.equal(edit.statusCode, 303, edit.body);
    leaks.push('header-value-ddd444', 'path-token-ddd444', 'query-token-ddd444');
    const rotated = await portal.post('/portal/MKT/webhooks/secretive/rotate-secret');
    leaks.push(/whsec_[A-Za-z0-9+/=]+/.exec(rotated.body)![0]);

    const { rows } = await ctx.db.query<{ row: string }>(`SELECT row_to_json(h)::text AS row FROM webhook_history h`);
    assert.equal(rows.length, 7);
    const everything = [
      ...rows.map((row) => row.row),
      (await api('GET', `${hook}/history`)).body,
      (await api('GET', '/api/v2/admin/webhook-history?marketplace_code=MKT&code=secretive', undefined, admin)).body,
      // The webhook's page shows its current URL above; its history section must not.
      historySectionOf((await portal.get('/portal/MKT/webhooks/secretive')).body),
      historySectionOf((await portal.get('/portal/MKT/webhooks/secretive/history')).body),
    ];
    for (const text of everything) {
      for (const secret of leaks) assert.ok(!text.includes(secret), `${secret} leaked into ${text.slice(0, 300)}`);
      assert.doesNotMatch(text, /whsec_/);
    }
    // What is kept instead: the header names and the receiver's origin.
    const history = JSON.parse(everything[rows.length]!) as { items: { changes: { field: string; before?: unknown; after?: unknown }[] }[] };
    const edited = history.items.find((item) => item.changes.some((c) => c.field === 'name'))!;
    assert.deepEqual(edited.changes.find((c) => c.field === 'headers'), { field: 'headers', before: ['Authorization'], after: ['X-Api-Key'] });
    assert.deepEqual(edited.changes.find((c) => c.field === 'callback_url'), { field: 'callback_url', before: receiver.url(''), after: receiver.url('') });
  });
});
