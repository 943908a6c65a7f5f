import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { actor, assertProblem, call, createWebhookAs, seedConnection, webhookBody, type Actor } from '../testing/webhooks.js';

/**
 * Tenant isolation: nobody reaches another tenant's webhook, on any endpoint, and the answer is
 * the same 404 as for a webhook that does not exist (no 403 that would confirm it exists).
 */
describe('webhook tenant isolation', () => {
  let ctx: TestContext;
  let owners: Record<string, Actor>;
  let intruders: Record<string, Actor>;
  const targets: { owner: string; code: string }[] = [
    { owner: 'seller 1', code: 'hook-of-seller-1' },
    { owner: 'marketplace mlb', code: 'hook-of-mlb' },
  ];

  before(async () => {
    ctx = await createTestApp();
    await seedConnection(ctx.db, 1, 'mlb');
    await seedConnection(ctx.db, 2, 'mlb'); // another seller on the same marketplace
    await seedConnection(ctx.db, 2, 'mla');
    await seedConnection(ctx.db, 1, 'mla');
    owners = {
      'seller 1': await actor(ctx, { sellerId: 1 }),
      'marketplace mlb': await actor(ctx, { role: 'marketplace', sellerId: 50, marketplaceCode: 'mlb' }),
    };
    intruders = {
      'a user of another seller': await actor(ctx, { sellerId: 2 }),
      'a marketplace user of another marketplace': await actor(ctx, { role: 'marketplace', sellerId: 51, marketplaceCode: 'mla' }),
    };
    await createWebhookAs(ctx, owners['seller 1']!, 'mlb', { code: 'hook-of-seller-1', name: 'private', seller_id: '1' });
    await createWebhookAs(ctx, owners['marketplace mlb']!, 'mlb', { code: 'hook-of-mlb', name: 'private' });
  });
  after(() => ctx.close());

  const snapshot = async () => (await ctx.db.query(`SELECT * FROM webhooks WHERE code IN ('hook-of-seller-1', 'hook-of-mlb') ORDER BY id`)).rows;

  test('get, update, delete and rotate-secret of another tenant\'s webhook are 404, like a webhook that does not exist', async () => {
    const before = await snapshot();
    const allIntruders = { ...intruders, 'the other owner': undefined };
    for (const target of targets) {
      const candidates: [string, Actor][] = Object.entries(allIntruders).map(([label, who]) => [label, who ?? (target.owner === 'seller 1' ? owners['marketplace mlb']! : owners['seller 1']!)]);
      for (const [label, who] of candidates) {
        const requests: ['GET' | 'PATCH' | 'DELETE' | 'POST', string, Record<string, unknown>?][] = [
          ['GET', `/v1/mlb/webhooks/${target.code}`],
          ['PATCH', `/v1/mlb/webhooks/${target.code}`, { name: 'pwned', callback_url: 'https://evil.example.com/' }],
          ['PATCH', `/v1/mlb/webhooks/${target.code}`, { active: false }],
          ['DELETE', `/v1/mlb/webhooks/${target.code}`],
          ['POST', `/v1/mlb/webhooks/${target.code}/rotate-secret`],
        ];
        for (const [method, url, payload] of requests) {
          const response = await call(ctx, who, method, url, payload);
          const body = assertProblem(response, 404, 'not_found');
          const missing = assertProblem(await call(ctx, who, method, url.replace(target.code, 'no-such-hook'), payload), 404, 'not_found');
          assert.equal(body.detail, missing.detail, `${label} ${method} ${url}`);
          assert.ok(!response.body.includes('private') && !response.body.includes('receiver.example.com'));
        }
      }
    }
    assert.deepEqual(await snapshot(), before, 'nothing changed');
  });

  test('another tenant\'s webhooks are never listed', async () => {
    const seller2List = await call(ctx, intruders['a user of another seller']!, 'GET', '/v1/mlb/webhooks');
    assert.equal(seller2List.statusCode, 200);
    assert.deepEqual(seller2List.json(), []);
    const ownList = (await call(ctx, owners['seller 1']!, 'GET', '/v1/mlb/webhooks')).json() as { code: string }[];
    assert.deepEqual(ownList.map((w) => w.code), ['hook-of-seller-1']);
    const mktList = (await call(ctx, owners['marketplace mlb']!, 'GET', '/v1/mlb/webhooks')).json() as { code: string }[];
    assert.deepEqual(mktList.map((w) => w.code), ['hook-of-mlb']);
    // A marketplace user may not even list another marketplace.
    assertProblem(await call(ctx, intruders['a marketplace user of another marketplace']!, 'GET', '/v1/mlb/webhooks'), 404, 'not_found');
  });

  test('create in another marketplace is 404; the same code in one\'s own tenant is a separate webhook', async () => {
    assertProblem(await call(ctx, intruders['a marketplace user of another marketplace']!, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'hook-of-mlb' })), 404, 'not_found');
    const before = await snapshot();
    const seller2 = intruders['a user of another seller']!;
    const created = await createWebhookAs(ctx, seller2, 'mlb', { code: 'hook-of-seller-1', name: 'mine' });
    assert.equal(created.name, 'mine');
    assert.equal((await call(ctx, owners['seller 1']!, 'GET', '/v1/mlb/webhooks/hook-of-seller-1')).json().name, 'private');
    assert.deepEqual(await snapshot().then((rows) => rows.filter((r) => r.tenant_id !== '2')), before);
    assert.equal((await call(ctx, seller2, 'DELETE', '/v1/mlb/webhooks/hook-of-seller-1')).statusCode, 204);
    assert.equal((await call(ctx, owners['seller 1']!, 'GET', '/v1/mlb/webhooks/hook-of-seller-1')).statusCode, 200);
  });

  test('a seller user cannot reach a marketplace its seller is not connected to, even one where the webhook code exists', async () => {
    const lonely = await actor(ctx, { sellerId: 3 });
    await seedConnection(ctx.db, 3, 'mla');
    for (const [method, url] of [['GET', '/v1/mlb/webhooks'], ['GET', '/v1/mlb/webhooks/hook-of-seller-1'], ['POST', '/v1/mlb/webhooks/hook-of-seller-1/rotate-secret'], ['DELETE', '/v1/mlb/webhooks/hook-of-mlb']] as const) {
      assertProblem(await call(ctx, lonely, method, url), 404, 'not_found');
    }
    assertProblem(await call(ctx, lonely, 'POST', '/v1/mlb/webhooks', webhookBody()), 404, 'not_found');
  });
});
