import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loginOk, postRefresh } from '../testing/auth.js';
import { order } from '../testing/events.js';
import { accessTokenFor, bearer, OTHER_STRONG_PASSWORD, seedConnection, seedUser, STRONG_PASSWORD } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';

describe('administration over HTTP', () => {
  let ctx: TestContext;
  let admin: { authorization: string };
  let adminId: number;
  before(async () => {
    ctx = await createTestApp();
    const user = await seedUser(ctx.db, { role: 'admin', sellerId: 1 });
    adminId = user.id;
    admin = bearer(await accessTokenFor(ctx, user));
  });
  after(() => ctx.close());

  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: Record<string, unknown>, headers = admin) =>
    ctx.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

  test('a seller that events or webhooks still name is not deleted (409): a seller made again with its id would take them over', async () => {
    await seedConnection(ctx.db, 620, 'SELLEV');
    const { id } = ((await call('GET', '/api/v2/admin/connections?seller_id=620')).json() as { id: number }[])[0]!;
    const accepted = await call('POST', '/v1/SELLEV/events', { topic: 'order/create', event_id: 'kept-620', seller_id: 620, entity_id: 'ORD-620', order: order('ORD-620'), author: 'system' });
    assert.equal(accepted.statusCode, 202, accepted.body);
    assert.equal((await call('DELETE', `/api/v2/admin/connections/${id}`)).statusCode, 204);
    const refused = await call('DELETE', '/api/v2/admin/sellers/620');
    assert.equal(refused.statusCode, 409, refused.body);
    assert.match(refused.json().detail, /Seller 620 is still in use \(events\)/);
    await ctx.db.query(`DELETE FROM events WHERE seller_id = 620`);
    // An admin's webhook restricted to the seller names it too (no connection needed for it).
    const hook = await call('POST', '/v1/SELLEV/webhooks', { code: 'for-620', name: 'x', topic: 'order/create', callback_url: 'https://example.com/hook', seller_id: '620' });
    assert.equal(hook.statusCode, 201, hook.body);
    assert.match((await call('DELETE', '/api/v2/admin/sellers/620')).json().detail, /still in use \(webhooks\)/);
    assert.equal((await call('DELETE', '/v1/SELLEV/webhooks/for-620')).statusCode, 204);
    assert.equal((await call('DELETE', '/api/v2/admin/sellers/620')).statusCode, 204);
  });

  test("a connection that webhooks depend on is not deleted (409): the seller's own there, the marketplace's for that seller", async () => {
    await seedConnection(ctx.db, 610, 'CONNWH');
    const { id } = ((await call('GET', '/api/v2/admin/connections?seller_id=610')).json() as { id: number }[])[0]!;
    const hook = (owner: { authorization: string }, code: string, sellerId?: string) =>
      call('POST', '/v1/CONNWH/webhooks', { code, name: code, topic: 'order/create', callback_url: 'https://example.com/hook', ...(sellerId ? { seller_id: sellerId } : {}) }, owner);
    const seller = bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { sellerId: 610 })));
    const marketplace = bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { sellerId: 610, role: 'marketplace', marketplaceCode: 'CONNWH' })));
    for (const [owner, code, sellerId] of [[seller, 'own', undefined], [marketplace, 'for-610', '610']] as const) {
      const created = await hook(owner, code, sellerId);
      assert.equal(created.statusCode, 201, created.body);
      const refused = await call('DELETE', `/api/v2/admin/connections/${id}`);
      assert.equal(refused.statusCode, 409, refused.body);
      assert.match(refused.json().detail, /still in use \(webhooks of seller 610 in CONNWH\)/);
      assert.equal((await call('DELETE', `/v1/CONNWH/webhooks/${code}`, undefined, owner)).statusCode, 204);
    }
    // A marketplace webhook for every seller does not depend on one connection.
    assert.equal((await hook(marketplace, 'for-all')).statusCode, 201);
    assert.equal((await call('DELETE', `/api/v2/admin/connections/${id}`)).statusCode, 204);
  });

  test('only admins: 401 without credentials, 403 for other roles', async () => {
    const seller = bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { sellerId: 1 })));
    const marketplace = bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { sellerId: 1, role: 'marketplace', marketplaceCode: 'M0' })));
    for (const url of ['/api/v2/admin/marketplaces', '/api/v2/admin/sellers', '/api/v2/admin/connections', '/api/v2/admin/users']) {
      assert.equal((await ctx.app.inject({ url })).statusCode, 401, url);
      assert.equal((await call('GET', url, undefined, seller)).statusCode, 403, url);
      assert.equal((await call('GET', url, undefined, marketplace)).statusCode, 403, url);
      assert.equal((await call('GET', url)).statusCode, 200, url);
    }
  });

  test('marketplaces, sellers and connections: create, get, update, list, delete where safe, audited', async () => {
    assert.equal((await call('POST', '/api/v2/admin/marketplaces', { code: 'ACME', name: 'Acme' })).statusCode, 201);
    assert.equal((await call('POST', '/api/v2/admin/marketplaces', { code: 'ACME', name: 'Again' })).statusCode, 409);
    assert.equal((await call('POST', '/api/v2/admin/marketplaces', { code: 'bad code', name: 'x' })).statusCode, 400);
    assert.equal((await call('PATCH', '/api/v2/admin/marketplaces/ACME', { name: 'Acme Market' })).json().name, 'Acme Market');
    assert.equal((await call('GET', '/api/v2/admin/marketplaces/ACME')).json().name, 'Acme Market');
    assert.equal((await call('GET', '/api/v2/admin/marketplaces/NOPE')).statusCode, 404);
    assert.equal((await call('POST', '/api/v2/admin/sellers', { id: 500, name: 'Five hundred' })).statusCode, 201);
    assert.equal((await call('PATCH', '/api/v2/admin/sellers/500', { name: 'Renamed' })).json().name, 'Renamed');
    const connection = await call('POST', '/api/v2/admin/connections', { seller_id: 500, marketplace_code: 'ACME' });
    assert.equal(connection.statusCode, 201);
    const missing = await call('POST', '/api/v2/admin/connections', { seller_id: 501, marketplace_code: 'ACME' });
    assert.equal(missing.statusCode, 409);
    assert.match(missing.json().detail, /There is no seller 501/);
    const filtered = (await call('GET', '/api/v2/admin/connections?seller_id=500')).json() as { id: number }[];
    assert.deepEqual(filtered.map((c) => c.id), [connection.json().id]);
    // In use: refused, nothing deleted.
    const inUse = await call('DELETE', '/api/v2/admin/marketplaces/ACME');
    assert.equal(inUse.statusCode, 409);
    assert.match(inUse.json().detail, /still in use \(marketplace_connections\)/);
    assert.equal((await call('DELETE', `/api/v2/admin/connections/${connection.json().id}`)).statusCode, 204);
    assert.equal((await call('DELETE', '/api/v2/admin/marketplaces/ACME')).statusCode, 204);
    assert.equal((await call('DELETE', '/api/v2/admin/sellers/500')).statusCode, 204);
    assert.equal((await call('DELETE', '/api/v2/admin/sellers/500')).statusCode, 404);
    const { rows } = await ctx.db.query<{ actor: string; action: string; target_kind: string; target_id: string }>(
      `SELECT actor, action, target_kind, target_id FROM admin_audit WHERE target_id IN ('ACME', '500') ORDER BY id`,
    );
    assert.deepEqual(rows.map((r) => `${r.actor} ${r.action} ${r.target_kind} ${r.target_id}`), [
      `user:${adminId} create marketplace ACME`,
      `user:${adminId} update marketplace ACME`,
      `user:${adminId} create seller 500`,
      `user:${adminId} update seller 500`,
      `user:${adminId} delete marketplace ACME`,
      `user:${adminId} delete seller 500`,
    ]);
  });

  test('a name with a NUL or another control character, or with nothing visible, is refused with 400, not a 500 from the database', async () => {
    for (const name of ['\u0000', 'Acme\u0000', 'A\u001fB', 'A\u007f', '\u200b', ' \u200e\u00a0']) {
      const created = await call('POST', '/api/v2/admin/sellers', { id: 700, name });
      assert.equal(created.statusCode, 400, JSON.stringify(name));
      assert.equal(created.json().code, 'validation_failed');
      assert.equal((await call('POST', '/api/v2/admin/marketplaces', { code: 'NUL', name })).statusCode, 400, JSON.stringify(name));
    }
    assert.equal((await call('POST', '/api/v2/admin/sellers', { id: 700, name: 'Seven hundred' })).statusCode, 201);
    assert.equal((await call('PATCH', '/api/v2/admin/sellers/700', { name: 'x\u0000' })).statusCode, 400);
    assert.equal((await call('GET', '/api/v2/admin/sellers/700')).json().name, 'Seven hundred');
  });

  test('lists are paginated with Link rel="next" until the last page', async () => {
    for (let id = 600; id < 605; id++) assert.equal((await call('POST', '/api/v2/admin/sellers', { id, name: `S${id}` })).statusCode, 201);
    const seen: number[] = [];
    let url: string | undefined = '/api/v2/admin/sellers?limit=2';
    let pages = 0;
    while (url) {
      const response = await call('GET', url);
      assert.equal(response.statusCode, 200);
      seen.push(...(response.json() as { id: number }[]).map((s) => s.id));
      url = /<([^>]+)>; rel="next"/.exec(String(response.headers.link ?? ''))?.[1];
      pages++;
    }
    assert.ok(pages >= 3);
    assert.deepEqual(seen, [...seen].sort((a, b) => a - b));
    for (let id = 600; id < 605; id++) assert.ok(seen.includes(id));
    assert.equal((await call('GET', '/api/v2/admin/sellers?cursor=garbage')).statusCode, 400);
    // Forged keys past what the columns hold: 400 naming the cursor, not a 500 from the database.
    const forged = (key: unknown) => Buffer.from(JSON.stringify(key)).toString('base64url');
    for (const [list, key] of [['sellers', 2 ** 31], ['users', 2 ** 31], ['connections', -1], ['api-keys', 2 ** 31], ['marketplaces', '\u0000'], ['marketplaces', 'a b']] as const) {
      const response = await call('GET', `/api/v2/admin/${list}?cursor=${forged(key)}`);
      assert.equal(response.statusCode, 400, `${list} ${JSON.stringify(key)}: ${response.body}`);
      assert.equal(response.json().errors[0].field, 'query.cursor');
    }
  });

  test('users: create (admins without a seller), get, list without password hashes, delete', async () => {
    const created = await call('POST', '/api/v2/admin/users', { username: 'root2', password: STRONG_PASSWORD, role: 'admin' });
    assert.equal(created.statusCode, 201, created.body);
    assert.equal(created.json().seller_id, null);
    const login = await loginOk(ctx, { username: 'root2', password: STRONG_PASSWORD });
    assert.equal(login.seller_id, 0);
    assert.equal((await call('POST', '/api/v2/admin/users', { username: 'nos', password: STRONG_PASSWORD })).statusCode, 400, 'a seller user needs a seller');
    assert.equal((await call('POST', '/api/v2/admin/users', { username: 'short', password: 'x', seller_id: 1 })).statusCode, 400);
    const list = await call('GET', '/api/v2/admin/users');
    assert.ok(!list.body.includes('argon2'));
    assert.equal((await call('DELETE', `/api/v2/admin/users/${created.json().id}`)).statusCode, 204);
    assert.equal((await call('GET', `/api/v2/admin/users/${created.json().id}`)).statusCode, 404);
    assert.equal((await postRefresh(ctx, login.refresh_token)).statusCode, 401);
  });

  test('users: a rename keeps the password and sessions, is refused (409) for a name taken in any case, and is audited', async () => {
    const created = await call('POST', '/api/v2/admin/users', { username: 'before-rename', password: STRONG_PASSWORD, seller_id: 1 });
    const id = created.json().id as number;
    await call('POST', '/api/v2/admin/users', { username: 'Taken-Name', password: STRONG_PASSWORD, seller_id: 1 });
    const session = await loginOk(ctx, { username: 'before-rename', password: STRONG_PASSWORD });
    const renamed = await call('PATCH', `/api/v2/admin/users/${id}`, { username: 'after-rename' });
    assert.equal(renamed.statusCode, 200, renamed.body);
    assert.equal(renamed.json().username, 'after-rename');
    assert.equal(renamed.json().active, true);
    await loginOk(ctx, { username: 'after-rename', password: STRONG_PASSWORD });
    assert.equal((await postRefresh(ctx, session.refresh_token)).statusCode, 200, 'sessions stay');
    const taken = await call('PATCH', `/api/v2/admin/users/${id}`, { username: 'taken-name' });
    assert.equal(taken.statusCode, 409, taken.body);
    assert.equal((await call('PATCH', `/api/v2/admin/users/${id}`, {})).statusCode, 400, 'nothing to change');
    assert.equal((await call('PATCH', `/api/v2/admin/users/${id}`, { username: 'tab\tname' })).statusCode, 400);
    assert.equal((await call('PATCH', `/api/v2/admin/users/${id}`, { role: 'admin' })).statusCode, 400, 'the role is fixed');
    const { rows } = await ctx.db.query<{ action: string; detail: unknown }>(`SELECT action, detail FROM admin_audit WHERE target_kind = 'user' AND target_id = $1 ORDER BY id`, [String(id)]);
    assert.deepEqual(rows.map((row) => [row.action, row.detail]), [['create', { role: 'seller' }], ['update', { fields: ['username'] }]]);
  });

  test('a deleted user\'s access token, still valid, cannot record anything as that user: 401, not 500', async () => {
    await seedConnection(ctx.db, 1, 'MKT');
    const user = await seedUser(ctx.db, { role: 'marketplace', marketplaceCode: 'MKT', sellerId: 1 });
    const token = bearer(await accessTokenFor(ctx, user));
    const event = { topic: 'order/create', seller_id: 1, entity_id: 'ORD-GONE', order: order('ORD-GONE'), author: 'system' };
    const send = () => ctx.app.inject({ method: 'POST', url: '/v1/MKT/events', headers: token, payload: event });
    const link = () => ctx.app.inject({ method: 'POST', url: '/v1/MKT/portal-links', headers: token, payload: {} });
    assert.equal((await link()).statusCode, 201, 'the token works while its user exists');
    assert.equal((await call('DELETE', `/api/v2/admin/users/${user.id}`)).statusCode, 204);
    // Stateless: reads still work until the token expires; writes naming the user as their maker do not.
    assert.equal((await ctx.app.inject({ method: 'GET', url: '/v1/MKT/webhooks', headers: token })).statusCode, 200);
    // Nor end its sessions or change its password (the audit row names the user): 401, not 500.
    const own = (url: string, payload?: object) => ctx.app.inject({ method: 'POST', url, headers: token, ...(payload ? { payload } : {}) });
    const ownActions = [await own('/api/v2/auth/logout'), await own('/api/v2/auth/revoke-all'), await own('/api/v2/auth/password', { current_password: 'x', new_password: STRONG_PASSWORD })];
    for (const response of [await send(), await link(), ...ownActions]) {
      assert.equal(response.statusCode, 401, response.body);
      assert.equal(response.json().detail, 'The user of this access token no longer exists.');
    }
    const { rows } = await ctx.db.query(`SELECT 1 FROM events WHERE event_id = 'ORD-GONE' OR body::text LIKE '%ORD-GONE%'`);
    assert.equal(rows.length, 0, 'nothing was stored');
  });

  test('the last active administrator cannot be switched off or deleted over HTTP (409); two admins switching each other off at once leave one', async () => {
    // Only this file's admin stays active (other tests made admins of their own).
    await ctx.db.query(`UPDATE users SET active = false WHERE role = 'admin' AND id <> $1`, [adminId]);
    for (const response of [await call('PATCH', `/api/v2/admin/users/${adminId}`, { active: false }), await call('DELETE', `/api/v2/admin/users/${adminId}`)]) {
      assert.equal(response.statusCode, 409, response.body);
      assert.match(response.json().detail, /last active administrator/);
    }
    // With a second admin, each switches the other off at the same moment: one of the two wins.
    const second = await seedUser(ctx.db, { role: 'admin', sellerId: 1 });
    const secondToken = bearer(await accessTokenFor(ctx, second));
    const [a, b] = await Promise.all([
      call('PATCH', `/api/v2/admin/users/${second.id}`, { active: false }),
      call('PATCH', `/api/v2/admin/users/${adminId}`, { active: false }, secondToken),
    ]);
    // The loser gets 409, or 401 when the winner had switched it off before its request was checked.
    const statuses = [a.statusCode, b.statusCode].sort();
    assert.ok(statuses[0] === 200 && (statuses[1] === 401 || statuses[1] === 409), `${a.body} ${b.body}`);
    const { rows } = await ctx.db.query(`SELECT id FROM users WHERE role = 'admin' AND active`);
    assert.equal(rows.length, 1, 'one active administrator is left');
    // Put this file's admin back for the tests after this one.
    await ctx.db.query(`UPDATE users SET active = true WHERE id = $1`, [adminId]);
  });

  test('administration needs a live user: a deactivated or deleted admin\'s token, still valid, is refused (401) and mints nothing', async () => {
    const other = await seedUser(ctx.db, { role: 'admin', sellerId: 1 });
    const token = bearer(await accessTokenFor(ctx, other));
    const mintKey = () => call('POST', '/api/v2/admin/api-keys', { name: 'persist', role: 'admin' }, token);
    assert.equal((await call('GET', '/api/v2/admin/users', undefined, token)).statusCode, 200, 'the token works while its user is active');
    assert.equal((await call('PATCH', `/api/v2/admin/users/${other.id}`, { active: false })).statusCode, 200);
    for (const response of [await mintKey(), await call('PATCH', `/api/v2/admin/users/${other.id}`, { active: true }, token), await call('GET', '/api/v2/admin/users', undefined, token)]) {
      assert.equal(response.statusCode, 401, response.body);
      assert.equal(response.json().detail, 'The user of this access token is deactivated.');
    }
    assert.equal((await call('GET', `/api/v2/admin/users/${other.id}`)).json().active, false, 'it did not switch itself back on');
    assert.equal((await call('DELETE', `/api/v2/admin/users/${other.id}`)).statusCode, 204);
    for (const response of [await mintKey(), await call('POST', '/api/v2/admin/users', { username: 'ghost-admin', password: STRONG_PASSWORD, role: 'admin' }, token)]) {
      assert.equal(response.statusCode, 401, response.body);
      assert.equal(response.json().detail, 'The user of this access token no longer exists.');
    }
    const { rows } = await ctx.db.query(`SELECT 1 FROM api_keys WHERE name = 'persist' UNION ALL SELECT 1 FROM users WHERE username = 'ghost-admin'`);
    assert.equal(rows.length, 0, 'nothing was created');
  });

  test('deactivating a user revokes every session; activating again does not revive them', async () => {
    const user = await seedUser(ctx.db, { sellerId: 1 });
    const sessions = [await loginOk(ctx, user), await loginOk(ctx, user)];
    const off = await call('PATCH', `/api/v2/admin/users/${user.id}`, { active: false });
    assert.equal(off.statusCode, 200);
    assert.equal(off.json().active, false);
    // While disabled, a refresh says so (403, as for a disabled user's login), and audits no breach.
    const refused = await postRefresh(ctx, sessions[0]!.refresh_token);
    assert.equal(refused.statusCode, 403, refused.body);
    assert.equal(refused.json().code, 'user_inactive');
    const breaches = await ctx.db.query(`SELECT 1 FROM auth_events WHERE type = 'refresh_reuse_detected' AND user_id = $1`, [user.id]);
    assert.equal(breaches.rowCount, 0);
    const on = await call('PATCH', `/api/v2/admin/users/${user.id}`, { active: true });
    assert.equal(on.json().active, true);
    for (const session of sessions) assert.equal((await postRefresh(ctx, session.refresh_token)).statusCode, 401);
    // The user logs in again normally.
    await loginOk(ctx, user);
  });

  test('an admin sets a new password: the old one stops working and every session ends', async () => {
    const user = await seedUser(ctx.db, { sellerId: 1 });
    const session = await loginOk(ctx, user);
    assert.equal((await call('POST', `/api/v2/admin/users/${user.id}/password`, { password: OTHER_STRONG_PASSWORD })).statusCode, 204);
    assert.equal((await postRefresh(ctx, session.refresh_token)).statusCode, 401);
    await loginOk(ctx, { username: user.username, password: OTHER_STRONG_PASSWORD });
    assert.equal((await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username: user.username, password: user.password } })).statusCode, 401);
  });

  test('the admin routes are in the OpenAPI document with operation ids', async () => {
    const doc = (await ctx.app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, Record<string, { operationId?: string }>> };
    for (const path of ['/api/v2/admin/marketplaces', '/api/v2/admin/sellers/{id}', '/api/v2/admin/connections', '/api/v2/admin/users/{id}', '/api/v2/admin/api-keys', '/api/v2/auth/password', '/.well-known/jwks.json']) {
      assert.ok(doc.paths[path], path);
      for (const operation of Object.values(doc.paths[path]!)) assert.ok(operation.operationId, path);
    }
  });
});
