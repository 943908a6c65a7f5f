import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { getProducts, loginOk } from '../testing/auth.js';
import { accessTokenFor, seedUser, type SeededUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { insertProduct } from './products.repository.js';

describe('GET /api/v2/products', () => {
  let ctx: TestContext;
  let alice: SeededUser;
  let bob: SeededUser;
  let empty: SeededUser;
  before(async () => {
    ctx = await createTestApp();
    alice = await seedUser(ctx.db, { sellerId: 11 });
    bob = await seedUser(ctx.db, { sellerId: 12 });
    empty = await seedUser(ctx.db, { sellerId: 13 });
    for (let i = 1; i <= 5; i++) await insertProduct(ctx.db, { sellerId: 11, sku: `A-${i}`, name: `Alice ${i}`, price: 10.5 * i, stock: i });
    await insertProduct(ctx.db, { sellerId: 12, sku: 'B-1', name: 'Bob 1' });
  });
  after(() => ctx.close());

  test('lists only the products of the seller in the token', async () => {
    const { token } = await loginOk(ctx, alice);
    const response = await getProducts(ctx, token);
    assert.equal(response.statusCode, 200);
    const page = response.json();
    assert.deepEqual(page.items.map((p: { sku: string }) => p.sku), ['A-1', 'A-2', 'A-3', 'A-4', 'A-5']);
    assert.equal(page.next_cursor, null);
    assert.deepEqual(Object.keys(page.items[0]).sort(), ['created_at', 'id', 'name', 'price', 'sku', 'stock']);
    assert.equal(page.items[1].price, 21);
    assert.equal(page.items[1].stock, 2);
    const bobs = (await getProducts(ctx, (await loginOk(ctx, bob)).token)).json();
    assert.deepEqual(bobs.items.map((p: { sku: string; price: null }) => [p.sku, p.price]), [['B-1', null]]);
  });

  test('a seller in the query string is ignored: the token decides', async () => {
    const token = await accessTokenFor(ctx, bob);
    for (const query of ['?seller_id=11', '?sellerId=11&seller=11']) {
      const response = await getProducts(ctx, token, query);
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json().items.map((p: { sku: string }) => p.sku), ['B-1']);
    }
  });

  test('no products is an empty page', async () => {
    assert.deepEqual((await getProducts(ctx, await accessTokenFor(ctx, empty))).json(), { items: [], next_cursor: null });
  });

  test('pages follow next_cursor until it is null', async () => {
    const token = await accessTokenFor(ctx, alice);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const response = await getProducts(ctx, token, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(response.statusCode, 200);
      const page = response.json() as { items: { sku: string }[]; next_cursor: string | null };
      assert.ok(page.items.length <= 2);
      seen.push(...page.items.map((p) => p.sku));
      cursor = page.next_cursor;
      pages++;
    } while (cursor && pages < 10);
    assert.deepEqual(seen, ['A-1', 'A-2', 'A-3', 'A-4', 'A-5']);
    assert.equal(pages, 3);
  });

  test('an exact last page has no next cursor', async () => {
    const page = (await getProducts(ctx, await accessTokenFor(ctx, alice), '?limit=5')).json();
    assert.equal(page.items.length, 5);
    assert.equal(page.next_cursor, null);
  });

  test('bad limit or cursor is 400 naming the field', async () => {
    const token = await accessTokenFor(ctx, alice);
    for (const [query, field] of [['?limit=0', 'query.limit'], ['?limit=101', 'query.limit'], ['?limit=abc', 'query.limit'], ['?cursor=zzz', 'query.cursor'], ['?cursor=' + Buffer.from('p:-1').toString('base64url'), 'query.cursor'], ['?cursor=' + Buffer.from('p:2147483648').toString('base64url'), 'query.cursor']] as const) {
      const response = await getProducts(ctx, token, query);
      assert.equal(response.statusCode, 400, query);
      assert.equal(response.json().errors[0].field, field, query);
    }
  });

  test('without a valid bearer token: 401', async () => {
    const response = await ctx.app.inject({ method: 'GET', url: '/api/v2/products' });
    assert.equal(response.statusCode, 401);
    assert.equal(response.json().code, 'unauthorized');
  });
});
