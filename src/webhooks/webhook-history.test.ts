import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { runInProcess } from '../testing/cli.js';
import { seedDelivery } from '../testing/deliveries.js';
import { Receiver } from '../testing/receiver.js';
import { accessTokenFor, bearer, seedConnection, seedUser, type SeededUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { exactlyOneRow, HOST, lastHistoryId, PortalClient, rowsAfter, type RawHistoryRow } from '../testing/webhook-history.js';
import { pruneWebhookHistory } from './webhook-history.repository.js';

type Headers = { authorization: string };

describe('webhook history: every change, by every channel, one row', () => {
  let ctx: TestContext;
  let receiver: Receiver;
  let seller: SeededUser;
  let seller2: SeededUser;
  let mkt: SeededUser;
  let admin: SeededUser;
  let otherMkt: SeededUser;
  const as: Record<string, Headers> = {};

  before(async () => {
    ctx = await createTestApp({ ACCESS_TOKEN_TTL_SECONDS: '86400' });
    receiver = await Receiver.start();
    await seedConnection(ctx.db, 1, 'MKT');
    await seedConnection(ctx.db, 2, 'MKT');
    await seedConnection(ctx.db, 3, 'OTHER');
    seller = await seedUser(ctx.db, { username: 'h-seller', password: 'seller-pass-1', sellerId: 1 });
    seller2 = await seedUser(ctx.db, { username: 'h-seller2', sellerId: 2 });
    mkt = await seedUser(ctx.db, { username: 'h-mkt', password: 'mkt-pass-1', role: 'marketplace', marketplaceCode: 'MKT', sellerId: 1 });
    admin = await seedUser(ctx.db, { username: 'h-admin', role: 'admin', sellerId: 1 });
    otherMkt = await seedUser(ctx.db, { username: 'h-other', role: 'marketplace', marketplaceCode: 'OTHER', sellerId: 3 });
    for (const [name, user] of Object.entries({ seller, seller2, mkt, admin, otherMkt })) as[name] = bearer(await accessTokenFor(ctx, user));
  });
  after(async () => {
    await receiver.close();
    await ctx.close();
  });

  const api = (who: Headers, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
    ctx.app.inject({ method, url, headers: { ...who, host: HOST }, ...(payload === undefined ? {} : { payload }) });
  const ok = async <R extends { statusCode: number; body: string }>(response: Promise<R>, status: number): Promise<R> => {
    const done = await response;
    assert.equal(done.statusCode, status, done.body);
    return done;
  };
  const webhookId = async (code: string, tenantId = '1') =>
    Number((await ctx.db.query<{ id: string }>(`SELECT id FROM webhooks WHERE code = $1 AND tenant_id = $2`, [code, tenantId])).rows[0]!.id);
  /** A failed delivery of the webhook, ready for a retry or a replay. */
  const failedDelivery = async (code: string, tenantId = '1') => {
    const delivery = await seedDelivery(ctx.db, { id: await webhookId(code, tenantId), secret: '', code, marketplaceCode: 'MKT' }, { now: ctx.clock.now() });
    await ctx.db.query(`UPDATE deliveries SET status = 'failed', completed_at = created_at WHERE id = $1`, [delivery.id]);
    return delivery.id;
  };
  const actorOf = (row: RawHistoryRow) => ({ kind: row.actor_kind, role: row.actor_role, user_id: row.actor_user_id, api_key_id: row.actor_api_key_id, name: row.actor_name, channel: row.channel });
  const userActor = (user: SeededUser, channel: string) => ({ kind: 'user', role: user.role, user_id: user.id, api_key_id: null, name: user.username, channel });

  test('the API: create, update, pause, resume, rotate, test, retry, replay and delete, each one row by the user', async () => {
    const base = '/v1/MKT/webhooks';
    const hook = `${base}/api-hook`;
    const who = userActor(seller, 'api');

    const created = await exactlyOneRow(ctx, () => ok(api(as.seller!, 'POST', base, { code: 'api-hook', name: 'Orders', topic: 'order/create', callback_url: receiver.url('/in'), headers: { 'X-Token': 'v1' } }), 201));
    assert.equal(created.action, 'create');
    assert.deepEqual(actorOf(created), who);
    assert.deepEqual(created.changes, [
      { field: 'code', after: 'api-hook' },
      { field: 'topic', after: 'order/create' },
      { field: 'name', after: 'Orders' },
      { field: 'callback_url', after: receiver.url('').replace(/\/$/, '') },
      { field: 'seller_id', after: '*' },
      { field: 'headers', after: ['X-Token'] },
      { field: 'active', after: true },
    ]);

    const updated = await exactlyOneRow(ctx, () => ok(api(as.seller!, 'PATCH', hook, { name: 'Orders 2', headers: { 'X-Token': 'v2' }, callback_url: receiver.url('/in') }), 200));
    assert.equal(updated.action, 'update');
    // The callback URL did not change: not listed. The header's value did: its name is.
    assert.deepEqual(updated.changes, [{ field: 'name', before: 'Orders', after: 'Orders 2' }, { field: 'headers', before: ['X-Token'], after: ['X-Token'] }]);

    const paused = await exactlyOneRow(ctx, () => ok(api(as.seller!, 'PATCH', hook, { active: false }), 200));
    assert.equal(paused.action, 'pause');
    assert.deepEqual(paused.changes, [{ field: 'active', before: true, after: false }]);
    const resumed = await exactlyOneRow(ctx, () => ok(api(as.seller!, 'PATCH', hook, { active: true }), 200));
    assert.equal(resumed.action, 'resume');
    assert.deepEqual(resumed.changes, [{ field: 'active', before: false, after: true }]);
    // A PATCH that changes nothing (resuming an active webhook, the same name) is no history.
    const unchanged = await lastHistoryId(ctx);
    await ok(api(as.seller!, 'PATCH', hook, { active: true, name: 'Orders 2' }), 200);
    assert.deepEqual(await rowsAfter(ctx, unchanged), []);

    const rotated = await exactlyOneRow(ctx, () => ok(api(as.seller!, 'POST', `${hook}/rotate-secret`), 200));
    assert.equal(rotated.action, 'rotate_secret');
    assert.deepEqual(rotated.changes, [{ field: 'secret' }]);

    const tested = await exactlyOneRow(ctx, () => ok(api(as.seller!, 'POST', `${hook}/test`), 200));
    assert.equal(tested.action, 'test');
    assert.deepEqual(tested.detail, { success: true, status_code: 200, error: null });

    const deliveryId = await failedDelivery('api-hook');
    const retried = await exactlyOneRow(ctx, () => ok(api(as.seller!, 'POST', `${hook}/deliveries/${deliveryId}/retry`), 202));
    assert.equal(retried.action, 'retry');
    assert.deepEqual(retried.detail, { delivery_id: deliveryId });

    // A dry run is a count, not a change: no row.
    const before = await lastHistoryId(ctx);
    await ok(api(as.seller!, 'POST', `${hook}/replay`, { dry_run: true }), 200);
    assert.deepEqual(await rowsAfter(ctx, before), []);
    await failedDelivery('api-hook');
    const replayed = await exactlyOneRow(ctx, () => ok(api(as.seller!, 'POST', `${hook}/replay`, { status: ['failed'] }), 202));
    assert.equal(replayed.action, 'replay');
    assert.equal(replayed.detail?.matched, 1);
    assert.equal(replayed.detail?.replayed, 1);
    assert.deepEqual(replayed.detail?.statuses, ['failed']);

    const deleted = await exactlyOneRow(ctx, () => ok(api(as.seller!, 'DELETE', hook), 204));
    assert.equal(deleted.action, 'delete');

    const all = [created, updated, paused, resumed, rotated, tested, retried, replayed, deleted];
    for (const row of all) assert.deepEqual(actorOf(row), who, row.action);
    assert.equal(new Set(all.map((row) => row.webhook_id)).size, 1);
  });

  test('the API with an API key, and with an admin\'s credential: who is the key, or the admin', async () => {
    const key = (await ok(api(as.admin!, 'POST', '/api/v2/admin/api-keys', { name: 'ci-key', role: 'seller', seller_id: 1 }), 201)).body;
    const { id, key: secret } = JSON.parse(key) as { id: number; key: string };
    const created = await exactlyOneRow(ctx, () => ok(api(bearer(secret), 'POST', '/v1/MKT/webhooks', { code: 'key-hook', name: 'K', topic: 'order/create', callback_url: receiver.url() }), 201));
    assert.deepEqual(actorOf(created), { kind: 'api_key', role: 'seller', user_id: null, api_key_id: id, name: 'ci-key', channel: 'api' });
    const byAdmin = await exactlyOneRow(ctx, () => ok(api(as.admin!, 'PATCH', '/v1/MKT/webhooks/key-hook', { name: 'K2' }), 200));
    assert.deepEqual(actorOf(byAdmin), userActor(admin, 'api'));
  });

  test('the portal (password sign-in): create, edit, pause, resume, rotate, test, retry, replay; the page shows them newest first', async () => {
    const portal = await PortalClient.signIn(ctx, 'h-seller', 'seller-pass-1', 'MKT');
    const page = '/portal/MKT/webhooks/portal-hook';
    const expect = async (status: number, run: () => Promise<{ statusCode: number; body: string }>, action: string) => {
      const row = await exactlyOneRow(ctx, async () => assert.equal((await run()).statusCode, status));
      assert.equal(row.action, action);
      assert.deepEqual(actorOf(row), userActor(seller, 'portal'), action);
      return row;
    };
    await expect(201, () => portal.post('/portal/MKT/webhooks/new', { code: 'portal-hook', name: 'P', topic: 'order/create', callback_url: receiver.url() }), 'create');
    const edited = await expect(303, () => portal.post(`${page}/edit`, { name: 'P2', callback_url: receiver.url(), headers: 'X-Shop: north' }), 'update');
    assert.deepEqual(edited.changes, [{ field: 'name', before: 'P', after: 'P2' }, { field: 'headers', before: [], after: ['X-Shop'] }]);
    await expect(303, () => portal.post(`${page}/pause`), 'pause');
    await expect(303, () => portal.post(`${page}/resume`), 'resume');
    await expect(200, () => portal.post(`${page}/rotate-secret`), 'rotate_secret');
    await expect(200, () => portal.post(`${page}/test`), 'test');
    const deliveryId = await failedDelivery('portal-hook');
    await expect(303, () => portal.post(`${page}/deliveries/${deliveryId}/retry`), 'retry');
    const before = await lastHistoryId(ctx);
    assert.equal((await portal.post(`${page}/replay`, { mode: 'count', status: 'failed' })).statusCode, 200);
    assert.deepEqual(await rowsAfter(ctx, before), []);
    await failedDelivery('portal-hook');
    await expect(202, () => portal.post(`${page}/replay`, { mode: 'send', status: 'failed' }), 'replay');

    const detail = await portal.get(page);
    assert.equal(detail.statusCode, 200);
    const section = detail.body.slice(detail.body.indexOf('<h2>History</h2>'));
    const actionsOf = (body: string) => [...body.matchAll(/<td>(create|update|pause|resume|rotate secret|test|retry|replay)<\/td>/g)].map((match) => match[1]);
    assert.deepEqual(actionsOf(section), ['replay', 'retry', 'test', 'rotate secret', 'resume', 'pause', 'update', 'create']);
    assert.match(section, /user h-seller \(seller\)/);
    assert.match(section, /<code>name<\/code>: P → P2/);
    const whole = await portal.get(`${page}/history`);
    assert.equal(whole.statusCode, 200);
    assert.equal(actionsOf(whole.body).length, 8);
  });

  test('a portal link: the row names the link and its maker, acting as the link\'s session', async () => {
    const link = JSON.parse((await ok(api(as.mkt!, 'POST', '/v1/MKT/portal-links', {}), 201)).body) as { id: number; url: string };
    assert.ok(Number.isInteger(link.id), 'the link has a number');
    const portal = await PortalClient.openLink(ctx, link.url, 'MKT');
    const created = await exactlyOneRow(ctx, async () =>
      assert.equal((await portal.post('/portal/MKT/webhooks/new', { code: 'link-hook', name: 'L', topic: 'order/create', callback_url: receiver.url(), seller_id: '*' })).statusCode, 201));
    const paused = await exactlyOneRow(ctx, async () => assert.equal((await portal.post('/portal/MKT/webhooks/link-hook/pause')).statusCode, 303));
    for (const row of [created, paused]) {
      assert.deepEqual(actorOf(row), { kind: 'portal_link', role: 'marketplace', user_id: mkt.id, api_key_id: null, name: 'h-mkt', channel: 'portal_link' });
      assert.equal(Number(row.actor_portal_link_id), link.id, 'the row names the link');
    }
    assert.match((await portal.get('/portal/MKT/webhooks/link-hook')).body, new RegExp(`portal link #${link.id} made by h-mkt, acting as marketplace`));
    const items = JSON.parse((await ok(api(as.mkt!, 'GET', '/v1/MKT/webhooks/link-hook/history'), 200)).body).items as Array<{ actor: { portal_link_id: number | null } }>;
    assert.deepEqual(items.map((item) => item.actor.portal_link_id), [link.id, link.id]);
  });

  test('the admin API and the CLI: a tenant\'s deactivation and activation write a pause and a resume per webhook', async () => {
    await ok(api(as.seller2!, 'POST', '/v1/MKT/webhooks', { code: 's2-hook', name: 'S2', topic: 'order/create', callback_url: receiver.url() }), 201);
    const paused = await exactlyOneRow(ctx, () => ok(api(as.admin!, 'PATCH', '/api/v2/admin/sellers/2', { active: false }), 200));
    assert.equal(paused.action, 'pause');
    assert.deepEqual(actorOf(paused), userActor(admin, 'admin_api'));
    assert.deepEqual(paused.detail, { disabled_reason: 'tenant_deactivated' });
    const resumed = await exactlyOneRow(ctx, () => ok(api(as.admin!, 'PATCH', '/api/v2/admin/sellers/2', { active: true }), 200));
    assert.equal(resumed.action, 'resume');
    assert.deepEqual(actorOf(resumed), userActor(admin, 'admin_api'));

    const cli = { kind: 'cli', role: null, user_id: null, api_key_id: null, name: null, channel: 'cli' };
    const cliPaused = await exactlyOneRow(ctx, async () => assert.equal((await runInProcess(['sellers', 'deactivate', '2'], { db: ctx.db })).code, 0));
    assert.equal(cliPaused.action, 'pause');
    assert.deepEqual(actorOf(cliPaused), cli);
    const cliResumed = await exactlyOneRow(ctx, async () => assert.equal((await runInProcess(['sellers', 'activate', '2'], { db: ctx.db })).code, 0));
    assert.equal(cliResumed.action, 'resume');
    assert.deepEqual(actorOf(cliResumed), cli);
    // The owner reads them too.
    const history = JSON.parse((await ok(api(as.seller2!, 'GET', '/v1/MKT/webhooks/s2-hook/history'), 200)).body) as { items: { action: string; channel: string }[] };
    assert.deepEqual(history.items.map((item) => `${item.action}/${item.channel}`), ['resume/cli', 'pause/cli', 'resume/admin_api', 'pause/admin_api', 'create/api']);
  });

  test('tenancy: only who may GET the webhook reads its history; others get 404, without a token 401', async () => {
    await ok(api(as.seller!, 'POST', '/v1/MKT/webhooks', { code: 'mine', name: 'M', topic: 'order/create', callback_url: receiver.url() }), 201);
    await ok(api(as.seller!, 'GET', '/v1/MKT/webhooks/mine/history'), 200);
    await ok(api(as.admin!, 'GET', '/v1/MKT/webhooks/mine/history'), 200);
    await ok(api(as.seller2!, 'GET', '/v1/MKT/webhooks/mine/history'), 404);
    await ok(api(as.mkt!, 'GET', '/v1/MKT/webhooks/mine/history'), 404);
    await ok(api(as.otherMkt!, 'GET', '/v1/MKT/webhooks/mine/history'), 404);
    await ok(api(as.otherMkt!, 'GET', '/v1/OTHER/webhooks/mine/history'), 404);
    await ok(ctx.app.inject({ method: 'GET', url: '/v1/MKT/webhooks/mine/history' }), 401);
    // The admins' read of any code is for admins only.
    await ok(api(as.seller!, 'GET', '/api/v2/admin/webhook-history?marketplace_code=MKT&code=mine'), 403);
    await ok(api(as.mkt!, 'GET', '/api/v2/admin/webhook-history?marketplace_code=MKT&code=mine'), 403);
  });

  test('paging: newest first, cursor-paged like the delivery log (next_cursor and Link)', async () => {
    await ok(api(as.seller!, 'POST', '/v1/MKT/webhooks', { code: 'paged', name: 'n0', topic: 'order/create', callback_url: receiver.url() }), 201);
    for (let i = 1; i <= 6; i++) {
      ctx.clock.advanceSeconds(1);
      await ok(api(as.seller!, 'PATCH', '/v1/MKT/webhooks/paged', { name: `n${i}` }), 200);
    }
    const seen: { id: number; created_at: string; changes: { after?: unknown }[] }[] = [];
    let url: string | undefined = '/v1/MKT/webhooks/paged/history?limit=3';
    let pages = 0;
    while (url) {
      const response: { headers: Record<string, unknown>; body: string } = await ok(api(as.seller!, 'GET', url), 200);
      const body = JSON.parse(response.body) as { items: typeof seen; next_cursor: string | null };
      seen.push(...body.items);
      pages++;
      if (body.next_cursor) assert.equal(response.headers.link, `</v1/MKT/webhooks/paged/history?limit=3&cursor=${body.next_cursor}>; rel="next"`);
      else assert.equal(response.headers.link, undefined);
      url = body.next_cursor ? `/v1/MKT/webhooks/paged/history?limit=3&cursor=${body.next_cursor}` : undefined;
    }
    assert.equal(pages, 3);
    assert.equal(seen.length, 7);
    assert.deepEqual(seen.map((item) => item.changes.find((c) => 'after' in c)?.after), ['n6', 'n5', 'n4', 'n3', 'n2', 'n1', 'paged']);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i - 1]!.created_at >= seen[i]!.created_at);
    await ok(api(as.seller!, 'GET', '/v1/MKT/webhooks/paged/history?cursor=bm90LWEtY3Vyc29y'), 400);
    await ok(api(as.seller!, 'GET', '/v1/MKT/webhooks/paged/history?limit=101'), 400);
  });

  test('a deleted webhook\'s history: gone for the owner, read by admins (with the webhook\'s id and owner) until the audit retention', async () => {
    await ok(api(as.seller!, 'POST', '/v1/MKT/webhooks', { code: 'gone', name: 'G', topic: 'order/create', callback_url: receiver.url() }), 201);
    const firstId = await webhookId('gone');
    await ok(api(as.seller!, 'DELETE', '/v1/MKT/webhooks/gone'), 204);
    await ok(api(as.seller!, 'GET', '/v1/MKT/webhooks/gone/history'), 404);
    const adminRead = async () => JSON.parse((await ok(api(as.admin!, 'GET', '/api/v2/admin/webhook-history?marketplace_code=MKT&code=gone'), 200)).body) as {
      items: { action: string; webhook_id: number; webhook_deleted: boolean; owner: { kind: string; id: string }; actor: { name: string } }[];
    };
    const read = await adminRead();
    assert.deepEqual(read.items.map((item) => [item.action, item.webhook_id, item.webhook_deleted, item.owner, item.actor.name]), [
      ['delete', firstId, true, { kind: 'seller', id: '1' }, 'h-seller'],
      ['create', firstId, true, { kind: 'seller', id: '1' }, 'h-seller'],
    ]);
    // The code used again: the owner sees only the new webhook's history, the admins both.
    await ok(api(as.seller!, 'POST', '/v1/MKT/webhooks', { code: 'gone', name: 'G again', topic: 'order/create', callback_url: receiver.url() }), 201);
    const owner = JSON.parse((await ok(api(as.seller!, 'GET', '/v1/MKT/webhooks/gone/history'), 200)).body) as { items: { action: string }[] };
    assert.deepEqual(owner.items.map((item) => item.action), ['create']);
    const both = await adminRead();
    assert.deepEqual(both.items.map((item) => [item.action, item.webhook_deleted]), [['create', false], ['delete', true], ['create', true]]);

    // Pruned with the other audit rows after AUTH_AUDIT_RETENTION_DAYS, not before.
    const retention = ctx.config.AUTH_AUDIT_RETENTION_DAYS;
    assert.equal(await pruneWebhookHistory(ctx.db, ctx.clock.now(), retention), 0);
    const count = async () => Number((await ctx.db.query<{ n: string }>(`SELECT count(*) AS n FROM webhook_history`)).rows[0]!.n);
    const total = await count();
    assert.ok(total > 0);
    assert.equal(await pruneWebhookHistory(ctx.db, new Date(Date.now() + (retention + 1) * 86_400_000 + Math.max(0, ctx.clock.now().getTime() - Date.now())), retention), total);
    assert.equal(await count(), 0);
  });
});
