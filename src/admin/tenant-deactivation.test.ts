import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loginOk, postLogin, postRefresh } from '../testing/auth.js';
import { deliveriesOf, insertWebhook, postEvent, sampleEvent, seedWorld, type World } from '../testing/events.js';
import { accessTokenFor, bearer, seedConnection, seedUser, type SeededUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';

describe('deactivating a marketplace or a seller', () => {
  let ctx: TestContext;
  let world: World;
  before(async () => {
    ctx = await createTestApp();
    world = await seedWorld(ctx);
    // A marketplace of its own for the held-delivery test.
    await seedConnection(ctx.db, 4, 'THIRD');
  });
  after(() => ctx.close());

  const admin = () => world.headers.admin;
  const call = (method: 'GET' | 'POST' | 'PATCH', url: string, headers: { authorization: string }, payload?: Record<string, unknown>) =>
    ctx.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
  async function apiKey(body: Record<string, unknown>): Promise<{ authorization: string }> {
    const response = await call('POST', '/api/v2/admin/api-keys', admin(), { name: 'producer', ...body });
    assert.equal(response.statusCode, 201, response.body);
    return bearer(response.json().key as string);
  }
  const webhooksOf = (code: string, headers: { authorization: string }) => call('GET', `/v1/${code}/webhooks`, headers);
  async function webhook(id: number) {
    const { rows } = await ctx.db.query<{ active: boolean; disabled_reason: string | null }>(`SELECT active, disabled_reason FROM webhooks WHERE id = $1`, [id]);
    return rows[0]!;
  }

  test('a deactivated marketplace: its users and keys are refused at once, its events refused, its webhooks paused; others untouched', async () => {
    const mUser = await seedUser(ctx.db, { role: 'marketplace', sellerId: 1, marketplaceCode: 'MKT' });
    const otherUser = await seedUser(ctx.db, { role: 'marketplace', sellerId: 3, marketplaceCode: 'OTHER' });
    const session = await loginOk(ctx, mUser);
    const otherSession = await loginOk(ctx, otherUser);
    const mKey = await apiKey({ role: 'marketplace', marketplace_code: 'MKT' });
    const otherKey = await apiKey({ role: 'marketplace', marketplace_code: 'OTHER' });
    const hook = await insertWebhook(ctx.db, { tenantKind: 'marketplace', tenantId: 'MKT', topic: 'order/create' });
    const paused = await insertWebhook(ctx.db, { tenantKind: 'marketplace', tenantId: 'MKT', topic: 'order/create' });
    await ctx.db.query(`UPDATE webhooks SET active = false, disabled_reason = 'disabled_by_user' WHERE id = $1`, [paused.id]);
    assert.equal((await postEvent(ctx, mKey, sampleEvent('order/create', world, { event_id: 'before' }))).statusCode, 202);
    assert.equal((await deliveriesOf(ctx.db, hook.id)).length, 1);
    assert.equal((await webhooksOf('MKT', bearer(session.token))).statusCode, 200);

    const off = await call('PATCH', '/api/v2/admin/marketplaces/MKT', admin(), { active: false });
    assert.equal(off.statusCode, 200, off.body);
    assert.equal(off.json().active, false);
    assert.equal((await call('GET', '/api/v2/admin/marketplaces/MKT', admin())).json().active, false);
    const listed = (await call('GET', '/api/v2/admin/marketplaces', admin())).json() as { code: string; active: boolean }[];
    assert.deepEqual(listed.filter((m) => m.code === 'MKT' || m.code === 'OTHER').map((m) => [m.code, m.active]), [['MKT', false], ['OTHER', true]]);

    // The access token issued before, still within its lifetime: refused from the next request on.
    const refused = await webhooksOf('MKT', bearer(session.token));
    assert.equal(refused.statusCode, 401);
    assert.match(refused.json().detail, /marketplace of this access token is deactivated/);
    assert.equal((await webhooksOf('MKT', world.headers.marketplace)).statusCode, 401, 'every token of the marketplace');
    // The intake reads the tenant's state in its checks' statement: its tokens are refused there too.
    const event = await postEvent(ctx, bearer(session.token), sampleEvent('order/create', world, { event_id: 'during' }));
    assert.equal(event.statusCode, 401, event.body);
    assert.match(event.json().detail, /marketplace of this access token is deactivated/);
    // Its refresh tokens are revoked; presented, they say why (a stale client, not a breach).
    const refresh = await postRefresh(ctx, session.refresh_token);
    assert.equal(refresh.statusCode, 403);
    assert.equal(refresh.json().code, 'user_inactive');
    const login = await postLogin(ctx, { username: mUser.username, password: mUser.password });
    assert.equal(login.statusCode, 403);
    assert.equal(login.json().code, 'user_inactive');
    assert.match(login.json().detail, /marketplace is deactivated/);
    const keyRefused = await webhooksOf('MKT', mKey);
    assert.equal(keyRefused.statusCode, 401);
    assert.match(keyRefused.json().detail, /marketplace of this API key is deactivated/);
    // Intake on the marketplace is refused whoever sends (an admin too), with its own code.
    const intake = await postEvent(ctx, admin(), sampleEvent('order/create', world, { event_id: 'during' }));
    assert.equal(intake.statusCode, 409);
    assert.equal(intake.json().code, 'tenant_inactive');
    // Its webhooks are paused, nothing lost: the accepted delivery waits.
    assert.deepEqual(await webhook(hook.id), { active: false, disabled_reason: 'tenant_deactivated' });
    assert.deepEqual(await webhook(paused.id), { active: false, disabled_reason: 'disabled_by_user' });
    assert.deepEqual((await deliveriesOf(ctx.db, hook.id)).map((d) => d.status), ['pending']);

    // Tenant isolation: the other marketplace works as before; admins are not affected.
    assert.equal((await webhooksOf('OTHER', bearer(otherSession.token))).statusCode, 200);
    assert.equal((await webhooksOf('OTHER', otherKey)).statusCode, 200);
    assert.equal((await postRefresh(ctx, otherSession.refresh_token)).statusCode, 200);
    assert.equal((await webhooksOf('MKT', admin())).statusCode, 200);
    assert.equal((await postEvent(ctx, admin(), { ...sampleEvent('order/create', world), seller_id: 3 }, 'OTHER')).statusCode, 202);

    // Activated again: login and the key work; the old refresh token stays dead; the webhook resumes.
    const on = await call('PATCH', '/api/v2/admin/marketplaces/MKT', admin(), { active: true });
    assert.equal(on.json().active, true);
    assert.equal((await postRefresh(ctx, session.refresh_token)).statusCode, 401, 're-activation does not revive sessions');
    const again = await loginOk(ctx, mUser);
    assert.equal((await webhooksOf('MKT', bearer(again.token))).statusCode, 200);
    assert.equal((await webhooksOf('MKT', mKey)).statusCode, 200);
    assert.deepEqual(await webhook(hook.id), { active: true, disabled_reason: null });
    assert.deepEqual(await webhook(paused.id), { active: false, disabled_reason: 'disabled_by_user' }, 'a pause by its owner stays');
    assert.equal((await postEvent(ctx, mKey, sampleEvent('order/create', world, { event_id: 'after' }))).statusCode, 202);

    const { rows } = await ctx.db.query<{ action: string; detail: { revoked_tokens: number; webhooks: number } }>(
      `SELECT action, detail FROM admin_audit WHERE target_kind = 'marketplace' AND target_id = 'MKT' ORDER BY id`,
    );
    assert.deepEqual(rows.map((r) => r.action), ['deactivate', 'activate']);
    assert.equal(rows[0]!.detail.webhooks, 1);
    assert.ok(rows[0]!.detail.revoked_tokens >= 1);
  });

  test('a deactivated seller: its users and seller keys refused, events for it refused (also from its marketplace); other sellers and admins untouched', async () => {
    const sUser = await seedUser(ctx.db, { sellerId: 2 });
    const adminOfSeller2: SeededUser = await seedUser(ctx.db, { role: 'admin', sellerId: 2 });
    const session = await loginOk(ctx, sUser);
    const adminSession = await loginOk(ctx, adminOfSeller2);
    const sKey = await apiKey({ role: 'seller', seller_id: 2 });
    const oneKey = await apiKey({ role: 'seller', seller_id: 1 });
    const hook = await insertWebhook(ctx.db, { tenantKind: 'seller', tenantId: '2', topic: 'order/create' });
    const event2 = (id: string) => ({ ...sampleEvent('order/create', world, { event_id: id }), seller_id: 2 });
    assert.equal((await postEvent(ctx, sKey, event2('s-before'))).statusCode, 202);

    assert.equal((await call('PATCH', '/api/v2/admin/sellers/2', admin(), { active: false })).json().active, false);
    assert.equal((await webhooksOf('MKT', bearer(session.token))).statusCode, 401);
    assert.equal((await webhooksOf('MKT', world.headers.seller2)).statusCode, 401);
    assert.equal((await webhooksOf('MKT', sKey)).statusCode, 401);
    const own = await postEvent(ctx, world.headers.seller2, event2('s-own'));
    assert.equal(own.statusCode, 401, own.body);
    assert.match(own.json().detail, /seller of this access token is deactivated/);
    assert.equal((await postRefresh(ctx, session.refresh_token)).statusCode, 403);
    assert.equal((await postLogin(ctx, { username: sUser.username, password: sUser.password })).statusCode, 403);
    const intake = await postEvent(ctx, world.headers.marketplace, event2('s-during'));
    assert.equal(intake.statusCode, 409);
    assert.equal(intake.json().code, 'tenant_inactive');
    assert.match(intake.json().detail, /Seller 2 is deactivated/);
    assert.deepEqual(await webhook(hook.id), { active: false, disabled_reason: 'tenant_deactivated' });
    // An admin bound to that seller is an admin: unaffected, sessions kept. Seller 1 too.
    assert.equal((await webhooksOf('MKT', bearer(adminSession.token))).statusCode, 200);
    assert.equal((await postRefresh(ctx, adminSession.refresh_token)).statusCode, 200);
    assert.equal((await webhooksOf('MKT', world.headers.seller1)).statusCode, 200);
    assert.equal((await postEvent(ctx, oneKey, sampleEvent('order/create', world, { event_id: 's1' }))).statusCode, 202);

    assert.equal((await call('PATCH', '/api/v2/admin/sellers/2', admin(), { active: true })).json().active, true);
    assert.equal((await postRefresh(ctx, session.refresh_token)).statusCode, 401);
    await loginOk(ctx, sUser);
    assert.equal((await webhooksOf('MKT', sKey)).statusCode, 200);
    assert.equal((await postEvent(ctx, sKey, event2('s-after'))).statusCode, 202);
    assert.deepEqual(await webhook(hook.id), { active: true, disabled_reason: null });
  });

  test('what was held while the tenant was deactivated goes out, in order, when it is activated again', async () => {
    const hook = await insertWebhook(ctx.db, { tenantKind: 'marketplace', tenantId: 'THIRD', marketplaceCode: 'THIRD', topic: 'order/create' });
    assert.equal((await call('PATCH', '/api/v2/admin/marketplaces/THIRD', admin(), { active: false })).statusCode, 200);
    // An event that raced the deactivation (validated before it, fanned out after): the fan-out
    // still matches the paused webhook, and holds the delivery.
    await ctx.db.query(`UPDATE marketplaces SET active = true WHERE code = 'THIRD'`);
    const raced = await postEvent(ctx, admin(), { ...sampleEvent('order/create', world), seller_id: 4 }, 'THIRD');
    assert.equal(raced.statusCode, 202, raced.body);
    await ctx.db.query(`UPDATE marketplaces SET active = false WHERE code = 'THIRD'`);
    assert.deepEqual((await deliveriesOf(ctx.db, hook.id)).map((d) => d.status), ['held']);
    assert.equal((await call('PATCH', '/api/v2/admin/marketplaces/THIRD', admin(), { active: true })).statusCode, 200);
    assert.deepEqual((await deliveriesOf(ctx.db, hook.id)).map((d) => d.status), ['pending']);
  });

  test('only admins (de)activate: marketplace credentials, of this or another marketplace, are refused; unknown ones are 404', async () => {
    const other = bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { role: 'marketplace', sellerId: 3, marketplaceCode: 'OTHER' })));
    for (const headers of [other, world.headers.marketplace, world.headers.seller1]) {
      assert.equal((await call('PATCH', '/api/v2/admin/marketplaces/MKT', headers, { active: false })).statusCode, 403);
      assert.equal((await call('PATCH', '/api/v2/admin/sellers/1', headers, { active: false })).statusCode, 403);
    }
    assert.equal((await call('GET', '/api/v2/admin/marketplaces/MKT', admin())).json().active, true);
    assert.equal((await call('PATCH', '/api/v2/admin/marketplaces/NOPE', admin(), { active: false })).statusCode, 404);
    assert.equal((await call('PATCH', '/api/v2/admin/sellers/999', admin(), { active: false })).statusCode, 404);
    assert.equal((await call('PATCH', '/api/v2/admin/sellers/1', admin(), {})).statusCode, 400, 'something to change');
    assert.equal((await call('PATCH', '/api/v2/admin/sellers/1', admin(), { active: 'no' })).statusCode, 400);
  });
});
