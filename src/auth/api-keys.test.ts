import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildApp, type App } from '../app.js';
import { postEvent, sampleEvent, seedWorld, type World } from '../testing/events.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { hashApiKey } from './api-keys.js';

describe('API keys', () => {
  let ctx: TestContext;
  let world: World;
  let adminKey: string;
  before(async () => {
    ctx = await createTestApp();
    world = await seedWorld(ctx);
  });
  after(() => ctx.close());

  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
  async function createKey(headers: { authorization: string }, body: Record<string, unknown>) {
    const response = await ctx.app.inject({ method: 'POST', url: '/api/v2/admin/api-keys', headers, payload: body });
    assert.equal(response.statusCode, 201, response.body);
    return response.json() as { id: number; key: string; prefix: string; role: string; marketplace_code: string | null };
  }

  test('an admin creates a key: shown once, recognisable, 256 bits, stored only as its hash', async () => {
    const created = await createKey(world.headers.admin, { name: 'producer', role: 'admin' });
    adminKey = created.key;
    assert.match(created.key, /^plz_[A-Za-z0-9_-]{43}$/);
    assert.ok(created.key.startsWith(created.prefix));
    const { rows } = await ctx.db.query<{ key_hash: Buffer; row: string }>(`SELECT key_hash, row_to_json(api_keys)::text AS row FROM api_keys WHERE id = $1`, [created.id]);
    assert.ok(Buffer.from(rows[0]!.key_hash).equals(hashApiKey(created.key)));
    assert.ok(!rows[0]!.row.includes(created.key.slice(4)), 'the key itself is stored nowhere');
    const list = await ctx.app.inject({ url: '/api/v2/admin/api-keys', headers: world.headers.admin });
    assert.equal(list.statusCode, 200);
    assert.ok(!list.body.includes(created.key.slice(4)), 'a list never shows a key');
    const one = await ctx.app.inject({ url: `/api/v2/admin/api-keys/${created.id}`, headers: bearer(adminKey) });
    assert.equal(one.json().name, 'producer');
    assert.equal(one.json().key, undefined);
  });

  test('a key is renamed (audited), within the caller\'s scope only; the key keeps working', async () => {
    const created = await createKey(world.headers.admin, { name: 'old name', role: 'admin' });
    const rename = (id: number, headers: { authorization: string }, name: unknown) =>
      ctx.app.inject({ method: 'PATCH', url: `/api/v2/admin/api-keys/${id}`, headers, payload: { name } });
    const renamed = await rename(created.id, world.headers.admin, '  new name ');
    assert.equal(renamed.statusCode, 200, renamed.body);
    assert.equal(renamed.json().name, 'new name');
    assert.equal(renamed.json().key, undefined);
    assert.equal((await ctx.app.inject({ url: `/api/v2/admin/api-keys/${created.id}`, headers: bearer(created.key) })).json().name, 'new name');
    assert.equal((await rename(created.id, world.headers.admin, '\u200b')).statusCode, 400, 'nothing visible');
    assert.equal((await rename(999_999, world.headers.admin, 'x')).statusCode, 404);
    // A marketplace's credentials rename their marketplace's keys only: another's is 404.
    assert.equal((await rename(created.id, world.headers.marketplace, 'hijacked')).statusCode, 404);
    const own = await createKey(world.headers.marketplace, { name: 'mine', role: 'marketplace' });
    assert.equal((await rename(own.id, world.headers.marketplace, 'still mine')).statusCode, 200);
    const { rows } = await ctx.db.query<{ action: string }>(`SELECT action FROM admin_audit WHERE target_kind = 'api_key' AND target_id = $1 ORDER BY id`, [String(created.id)]);
    assert.deepEqual(rows.map((row) => row.action), ['create', 'update']);
  });

  test('a key works wherever an access token does, scoped like its role', async () => {
    const seller = await createKey(world.headers.admin, { name: 'seller 1 backend', role: 'seller', seller_id: 1 });
    assert.equal((await postEvent(ctx, bearer(seller.key), sampleEvent('order/create', world))).statusCode, 202);
    assert.equal((await postEvent(ctx, bearer(seller.key), sampleEvent('order/create', world, { seller_id: 2 }))).statusCode, 403);
    assert.equal((await ctx.app.inject({ url: '/api/v2/products', headers: bearer(seller.key) })).statusCode, 200);
    // Admin administration is for admins only.
    assert.equal((await ctx.app.inject({ url: '/api/v2/admin/users', headers: bearer(seller.key) })).statusCode, 403);
    assert.equal((await ctx.app.inject({ url: '/api/v2/admin/users', headers: bearer(adminKey) })).statusCode, 200);
    // A key has no session to end or list.
    assert.equal((await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/logout', headers: bearer(seller.key) })).statusCode, 403);
    assert.equal((await ctx.app.inject({ url: '/api/v2/auth/sessions', headers: bearer(seller.key) })).statusCode, 403);
  });

  test('a marketplace key sends events for every seller connected to its marketplace, and nothing elsewhere (404 as for users)', async () => {
    const mkt = await createKey(world.headers.admin, { name: 'MKT platform', role: 'marketplace', marketplace_code: 'MKT' });
    const other = await createKey(world.headers.admin, { name: 'OTHER platform', role: 'marketplace', marketplace_code: 'OTHER' });
    assert.equal((await postEvent(ctx, bearer(mkt.key), sampleEvent('order/create', world, { seller_id: 1, entity_id: 'K-1', order: { reference_order: 'K-1' } }))).statusCode, 202);
    assert.equal((await postEvent(ctx, bearer(mkt.key), sampleEvent('order/create', world, { seller_id: 2, entity_id: 'K-2', order: { reference_order: 'K-2' } }))).statusCode, 202);
    const elsewhere = await postEvent(ctx, bearer(mkt.key), sampleEvent('order/create', world, { seller_id: 3 }), 'OTHER');
    assert.equal(elsewhere.statusCode, 404);
    const userElsewhere = await ctx.app.inject({ url: '/v1/OTHER/webhooks', headers: world.headers.marketplace });
    const keyElsewhere = await ctx.app.inject({ url: '/v1/OTHER/webhooks', headers: bearer(mkt.key) });
    assert.equal(keyElsewhere.statusCode, 404);
    assert.equal(keyElsewhere.json().detail, userElsewhere.json().detail);
    // Keys of another marketplace: invisible (404), not revocable, not listed.
    assert.equal((await ctx.app.inject({ url: `/api/v2/admin/api-keys/${other.id}`, headers: bearer(mkt.key) })).statusCode, 404);
    assert.equal((await ctx.app.inject({ method: 'DELETE', url: `/api/v2/admin/api-keys/${other.id}`, headers: bearer(mkt.key) })).statusCode, 404);
    const listed = (await ctx.app.inject({ url: '/api/v2/admin/api-keys', headers: bearer(mkt.key) })).json() as { marketplace_code: string }[];
    assert.ok(listed.length > 0);
    assert.ok(listed.every((key) => key.marketplace_code === 'MKT'));
    // A marketplace makes keys of its own marketplace only.
    assert.equal((await ctx.app.inject({ method: 'POST', url: '/api/v2/admin/api-keys', headers: bearer(mkt.key), payload: { name: 'x', role: 'admin' } })).statusCode, 403);
    assert.equal((await ctx.app.inject({ method: 'POST', url: '/api/v2/admin/api-keys', headers: bearer(mkt.key), payload: { name: 'x', role: 'marketplace', marketplace_code: 'OTHER' } })).statusCode, 403);
    const own = await createKey(world.headers.marketplace, { name: 'made by the MKT user', role: 'marketplace' });
    assert.equal(own.marketplace_code, 'MKT');
    const stillThere = (await ctx.app.inject({ url: `/api/v2/admin/api-keys/${other.id}`, headers: world.headers.admin })).json();
    assert.equal(stillThere.revoked_at, null);
  });

  test('scope must fit the role, and exist; the name must be visible text', async () => {
    for (const body of [
      { name: 'x', role: 'marketplace' },
      { name: 'x', role: 'seller' },
      { name: 'x', role: 'admin', seller_id: 1 },
      { name: 'x', role: 'seller', seller_id: 1, marketplace_code: 'MKT' },
      { name: '', role: 'admin' },
      { name: 'k\u0000', role: 'admin' },
      { name: 'tab\tkey', role: 'admin' },
      { name: 'x', role: 'root' },
    ]) {
      const response = await ctx.app.inject({ method: 'POST', url: '/api/v2/admin/api-keys', headers: world.headers.admin, payload: body });
      assert.equal(response.statusCode, 400, JSON.stringify(body));
      for (const error of response.json().errors ?? []) assert.match(error.field, /^body\./, JSON.stringify(body));
    }
    // A scope that does not exist: 409, as for a user or a connection.
    for (const [body, detail] of [[{ name: 'x', role: 'seller', seller_id: 999 }, 'There is no seller 999.'], [{ name: 'x', role: 'marketplace', marketplace_code: 'NOPE' }, 'There is no marketplace NOPE.']] as const) {
      const response = await ctx.app.inject({ method: 'POST', url: '/api/v2/admin/api-keys', headers: world.headers.admin, payload: body });
      assert.equal(response.statusCode, 409, JSON.stringify(body));
      assert.equal(response.json().detail, detail);
    }
  });

  test('a revoked key answers 401 at once on every instance sharing the database', async () => {
    const key = (await createKey(world.headers.admin, { name: 'to revoke', role: 'seller', seller_id: 1 }));
    // A second app instance on the same database, as a second process would be.
    const second: App = await buildApp({ config: ctx.config, db: ctx.db, keys: ctx.keys, clock: ctx.clock, logger: false });
    try {
      for (const app of [ctx.app, second]) assert.equal((await app.inject({ url: '/api/v2/products', headers: bearer(key.key) })).statusCode, 200);
      const revoked = await second.inject({ method: 'DELETE', url: `/api/v2/admin/api-keys/${key.id}`, headers: world.headers.admin });
      assert.equal(revoked.statusCode, 204);
      for (const app of [ctx.app, second]) {
        const response = await app.inject({ url: '/api/v2/products', headers: bearer(key.key) });
        assert.equal(response.statusCode, 401);
        assert.equal(response.json().code, 'unauthorized');
      }
      // Revoking it again, twice at once: 204, and still the one audit row.
      const again = await Promise.all([ctx.app, second].map((app) => app.inject({ method: 'DELETE', url: `/api/v2/admin/api-keys/${key.id}`, headers: world.headers.admin })));
      assert.deepEqual(again.map((response) => response.statusCode), [204, 204]);
      const audit = await ctx.db.query(`SELECT actor FROM admin_audit WHERE target_kind = 'api_key' AND target_id = $1 AND action = 'revoke'`, [String(key.id)]);
      assert.equal(audit.rowCount, 1);
    } finally {
      await second.close();
    }
  });

  test('malformed and unknown keys are 401', async () => {
    for (const authorization of ['Bearer plz_', 'Bearer plz_short', `Bearer plz_${'A'.repeat(43)}`, `Bearer plz_${'A'.repeat(44)}`]) {
      const response = await ctx.app.inject({ url: '/api/v2/products', headers: { authorization } });
      assert.equal(response.statusCode, 401, authorization);
    }
  });

  test('the last-used time is kept, written at most once per resolution', async () => {
    const key = await createKey(world.headers.admin, { name: 'usage', role: 'seller', seller_id: 1 });
    const lastUsed = async () => (await ctx.db.query<{ last_used_at: Date | null }>(`SELECT last_used_at FROM api_keys WHERE id = $1`, [key.id])).rows[0]!.last_used_at;
    assert.equal(await lastUsed(), null);
    const first = ctx.clock.now();
    await ctx.app.inject({ url: '/api/v2/products', headers: bearer(key.key) });
    assert.equal((await lastUsed())?.getTime(), first.getTime());
    ctx.clock.advance((ctx.config.API_KEY_LAST_USED_RESOLUTION_SECONDS - 1) * 1000);
    await ctx.app.inject({ url: '/api/v2/products', headers: bearer(key.key) });
    assert.equal((await lastUsed())?.getTime(), first.getTime(), 'not rewritten within the resolution');
    ctx.clock.advance(1000);
    await ctx.app.inject({ url: '/api/v2/products', headers: bearer(key.key) });
    assert.equal((await lastUsed())?.getTime(), ctx.clock.now().getTime());
  });
});
