import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { actor, assertProblem, call, createWebhookAs, seedConnection, webhookBody, type Actor } from '../testing/webhooks.js';

describe('webhook limit per tenant and marketplace', () => {
  let ctx: TestContext;
  let seller1: Actor;
  let seller2: Actor;

  before(async () => {
    ctx = await createTestApp({ WEBHOOKS_PER_TENANT_LIMIT: '3' });
    await seedConnection(ctx.db, 1, 'mlb');
    await seedConnection(ctx.db, 2, 'mlb');
    await seedConnection(ctx.db, 1, 'mla');
    await seedConnection(ctx.db, 3, 'mlb');
    seller1 = await actor(ctx, { sellerId: 1 });
    seller2 = await actor(ctx, { sellerId: 2 });
  });
  after(() => ctx.close());

  test('one more than WEBHOOKS_PER_TENANT_LIMIT is 409 webhook_limit_reached; other tenants and marketplaces are not affected', async () => {
    for (const code of ['a', 'b', 'c']) await createWebhookAs(ctx, seller1, 'mlb', { code });
    const body = assertProblem(await call(ctx, seller1, 'POST', '/v1/mlb/webhooks', webhookBody({ code: 'd' })), 409, 'webhook_limit_reached');
    assert.match(body.detail, /3/);
    assert.equal((body as unknown as { limit: number }).limit, 3, 'the problem carries the limit');
    await createWebhookAs(ctx, seller1, 'mla', { code: 'd' });
    await createWebhookAs(ctx, seller2, 'mlb', { code: 'd' });
    // Deleting one makes room again.
    assert.equal((await call(ctx, seller1, 'DELETE', '/v1/mlb/webhooks/a')).statusCode, 204);
    await createWebhookAs(ctx, seller1, 'mlb', { code: 'd' });
  });

  test('the limit holds when creates race', async () => {
    const seller3 = await actor(ctx, { sellerId: 3 });
    const responses = await Promise.all(['r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7'].map((code) => call(ctx, seller3, 'POST', '/v1/mlb/webhooks', webhookBody({ code }))));
    const statuses = responses.map((r) => r.statusCode).sort();
    assert.deepEqual(statuses, [201, 201, 201, 409, 409, 409, 409]);
    const { rows } = await ctx.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhooks WHERE tenant_kind = 'seller' AND tenant_id = '3'`);
    assert.equal(rows[0]!.n, 3);
  });
});

describe('webhook list pagination', () => {
  let ctx: TestContext;
  let seller: Actor;
  let admin: Actor;

  before(async () => {
    ctx = await createTestApp();
    await seedConnection(ctx.db, 5, 'mlb');
    await seedConnection(ctx.db, 6, 'mlb');
    seller = await actor(ctx, { sellerId: 5 });
    admin = await actor(ctx, { role: 'admin', sellerId: 7 });
    for (const code of ['e', 'B', 'a', 'd', 'C']) await createWebhookAs(ctx, seller, 'mlb', { code });
    const other = await actor(ctx, { sellerId: 6 });
    for (const code of ['a', 'z']) await createWebhookAs(ctx, other, 'mlb', { code });
  });
  after(() => ctx.close());

  const nextLink = (link: unknown): string | undefined => {
    if (link === undefined) return undefined;
    const match = /^<([^>]+)>; rel="next"$/.exec(String(link));
    assert.ok(match, `Link header ${String(link)}`);
    return match[1];
  };

  async function walk(who: Actor, first: string): Promise<{ pages: string[][] }> {
    const pages: string[][] = [];
    let url: string | undefined = first;
    while (url) {
      const response = await call(ctx, who, 'GET', url);
      assert.equal(response.statusCode, 200, response.body);
      pages.push((response.json() as { code: string }[]).map((w) => w.code));
      url = nextLink(response.headers.link);
      assert.ok(pages.length < 20);
    }
    return { pages };
  }

  test('pages follow the Link rel="next" header in a stable code order; the last page has none', async () => {
    const { pages } = await walk(seller, '/v1/mlb/webhooks?limit=2');
    assert.deepEqual(pages, [['B', 'C'], ['a', 'd'], ['e']]);
    const all = await call(ctx, seller, 'GET', '/v1/mlb/webhooks');
    assert.equal(all.headers.link, undefined);
    assert.deepEqual((all.json() as { code: string }[]).map((w) => w.code), ['B', 'C', 'a', 'd', 'e']);
    const exact = await call(ctx, seller, 'GET', '/v1/mlb/webhooks?limit=5');
    assert.equal(exact.headers.link, undefined);
  });

  test('an admin pages through every tenant, codes that repeat included', async () => {
    const { pages } = await walk(admin, '/v1/mlb/webhooks?limit=1');
    assert.deepEqual(pages.flat(), ['B', 'C', 'a', 'a', 'd', 'e', 'z']);
  });

  test('a bad limit or cursor is 400', async () => {
    for (const query of ['limit=0', 'limit=101', 'limit=abc', 'cursor=nope', `cursor=${Buffer.from('{"a":1}').toString('base64url')}`, `cursor=${Buffer.from('["\\u0000",1]').toString('base64url')}`]) {
      const body = assertProblem(await call(ctx, seller, 'GET', `/v1/mlb/webhooks?${query}`), 400, 'validation_failed');
      assert.match(body.errors![0]!.field, /^query\./);
    }
  });
});
