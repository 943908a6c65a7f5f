import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { runInProcess } from '../testing/cli.js';
import { seedWorld } from '../testing/events.js';
import { accessTokenFor, seedUser, type SeededUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { waitFor } from '../testing/wait.js';
import { hashApiKey, newApiKey, shownPrefixOf } from './api-keys.js';
import { insertApiKey, lockApiKeyTree } from './api-keys.repository.js';
import { revokeApiKeyById } from './api-keys.service.js';

const DAY_MS = 86_400_000;
const MAX_DAYS = 30;

interface KeyBody {
  id: number;
  key: string;
  name: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
  created_by: string;
  creator: { kind: string; id: number | null; name: string | null };
}

describe('API keys: expiry, revocation of the keys a key made, last use', () => {
  let ctx: TestContext;
  let adminUser: SeededUser;
  let adminToken = { at: 0, headers: { authorization: '' } };
  before(async () => {
    ctx = await createTestApp({ API_KEY_MAX_LIFETIME_DAYS: String(MAX_DAYS) });
    await seedWorld(ctx);
    adminUser = await seedUser(ctx.db, { username: 'keys-admin', role: 'admin' });
  });
  after(() => ctx.close());

  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
  /** An admin's access token, issued again once the tests' clock has moved (tokens live 15 minutes). */
  const admin = () => adminToken.headers;
  async function freshAdmin(): Promise<void> {
    if (adminToken.at === ctx.clock.now().getTime()) return;
    adminToken = { at: ctx.clock.now().getTime(), headers: bearer(await accessTokenFor(ctx, adminUser)) };
  }
  beforeEach(freshAdmin);
  const create = (headers: { authorization: string }, body: Record<string, unknown>) =>
    ctx.app.inject({ method: 'POST', url: '/api/v2/admin/api-keys', headers, payload: body });
  async function createKey(headers: { authorization: string }, body: Record<string, unknown>): Promise<KeyBody> {
    const response = await create(headers, body);
    assert.equal(response.statusCode, 201, response.body);
    return response.json() as KeyBody;
  }
  const use = (key: string) => ctx.app.inject({ url: '/api/v2/products', headers: bearer(key) });
  const inFuture = (ms: number) => new Date(ctx.clock.now().getTime() + ms).toISOString();

  test('an expired key is refused with 401, like a revoked one, on its very expiry; its last use is not written then', async () => {
    const key = await createKey(admin(), { name: 'short-lived', role: 'seller', seller_id: 1, expires_at: inFuture(3_600_000) });
    assert.equal(key.expires_at, inFuture(3_600_000));
    assert.equal((await use(key.key)).statusCode, 200);
    const lastUsed = (await ctx.db.query<{ last_used_at: Date }>(`SELECT last_used_at FROM api_keys WHERE id = $1`, [key.id])).rows[0]!.last_used_at;
    ctx.clock.advance(3_600_000);
    await freshAdmin();
    const refused = await use(key.key);
    assert.equal(refused.statusCode, 401, refused.body);
    assert.equal(refused.json().code, 'unauthorized');
    assert.equal(refused.json().detail, 'The API key has expired.');
    assert.match(String(refused.headers['www-authenticate']), /invalid_token/);
    // Wherever a key is accepted: an admin key past its expiry administers nothing either.
    const adminKey = await createKey(admin(), { name: 'short admin', role: 'admin', expires_at: inFuture(1000) });
    ctx.clock.advance(1000);
    assert.equal((await ctx.app.inject({ url: '/api/v2/admin/api-keys', headers: bearer(adminKey.key) })).statusCode, 401);
    assert.equal((await create(bearer(adminKey.key), { name: 'minted late', role: 'admin' })).statusCode, 401);
    const after = (await ctx.db.query<{ last_used_at: Date }>(`SELECT last_used_at FROM api_keys WHERE id = $1`, [key.id])).rows[0]!.last_used_at;
    assert.equal(after.getTime(), lastUsed.getTime(), 'a refused key records no use');
  });

  test('expires_at must lie ahead and within API_KEY_MAX_LIFETIME_DAYS (400 naming the field); without it the key gets the cap', async () => {
    for (const expiresAt of [inFuture(MAX_DAYS * DAY_MS + 1000), inFuture(-1000), inFuture(0), '9999-12-31T23:59:59Z']) {
      const response = await create(admin(), { name: 'too long', role: 'admin', expires_at: expiresAt });
      assert.equal(response.statusCode, 400, `${expiresAt}: ${response.body}`);
      assert.equal(response.json().code, 'validation_failed');
      assert.equal(response.json().errors[0].field, 'body.expires_at');
    }
    assert.match((await create(admin(), { name: 'x', role: 'admin', expires_at: inFuture(MAX_DAYS * DAY_MS + 1000) })).json().errors[0].message, /at most 30 days ahead \(API_KEY_MAX_LIFETIME_DAYS\)/);
    assert.equal((await create(admin(), { name: 'x', role: 'admin', expires_at: 'tomorrow' })).statusCode, 400);
    const { rows } = await ctx.db.query(`SELECT 1 FROM api_keys WHERE name IN ('too long', 'x')`);
    assert.equal(rows.length, 0, 'nothing was created');
    assert.equal((await createKey(admin(), { name: 'at the cap', role: 'admin', expires_at: inFuture(MAX_DAYS * DAY_MS) })).expires_at, inFuture(MAX_DAYS * DAY_MS));
    assert.equal((await createKey(admin(), { name: 'default', role: 'admin' })).expires_at, inFuture(MAX_DAYS * DAY_MS));
  });

  test('CLI: --expires-in and --expires-at, checked against the same cap', async () => {
    const plaza = (args: string[]) => runInProcess(['api-keys', 'add', '--name', 'cli key', '--role', 'admin', ...args], { db: ctx.db, config: ctx.config, now: ctx.clock.now() });
    const tooLong = await plaza(['--expires-in', `${MAX_DAYS + 1}d`]);
    assert.equal(tooLong.code, 2, tooLong.stderr);
    assert.match(tooLong.stderr, /--expires-in: may be at most 30 days ahead/);
    assert.match((await plaza(['--expires-at', inFuture(-1000)])).stderr, /--expires-at: must be in the future/);
    assert.match((await plaza(['--expires-in', '7d', '--expires-at', inFuture(1000)])).stderr, /not both/);
    assert.match((await plaza(['--expires-in', 'soon'])).stderr, /--expires-in must be a number of days or hours/);
    const made = await plaza(['--expires-in', '12h']);
    assert.equal(made.code, 0, made.stderr);
    assert.match(made.stderr, new RegExp(`expires ${inFuture(12 * 3_600_000).replace(/[.]/g, '\\.')}`));
    const listed = await runInProcess(['api-keys', 'list'], { db: ctx.db, config: ctx.config });
    assert.match(listed.stdout, /CREATED BY +LAST USED +EXPIRES +REVOKED/);
  });

  test('a key made by a key expires no later than its maker', async () => {
    const maker = await createKey(admin(), { name: 'maker for a day', role: 'admin', expires_at: inFuture(DAY_MS) });
    assert.equal((await createKey(bearer(maker.key), { name: 'child', role: 'admin' })).expires_at, maker.expires_at);
    const longer = await create(bearer(maker.key), { name: 'outliving', role: 'admin', expires_at: inFuture(2 * DAY_MS) });
    assert.equal(longer.statusCode, 400, longer.body);
    assert.match(longer.json().errors[0].message, /not be later than the expiry of the API key that makes it/);
  });

  test('revoking a key revokes the keys it made and theirs, at once; keys of another maker stay; the list names each maker', async () => {
    const root = await createKey(admin(), { name: 'root key', role: 'admin' });
    const child = await createKey(bearer(root.key), { name: 'child key', role: 'admin' });
    const grandchild = await createKey(bearer(child.key), { name: 'grandchild key', role: 'seller', seller_id: 1 });
    const otherMaker = await createKey(admin(), { name: 'other maker', role: 'admin' });
    const sibling = await createKey(bearer(otherMaker.key), { name: 'sibling', role: 'admin' });
    const byUser = await createKey(admin(), { name: 'by a user', role: 'seller', seller_id: 1 });

    // Who made each key: the key (id and name) or the user, in every answer.
    assert.deepEqual(child.creator, { kind: 'api_key', id: root.id, name: 'root key' });
    assert.equal(child.created_by, `api_key:${root.id}`);
    const listed = (await ctx.app.inject({ url: '/api/v2/admin/api-keys?limit=100', headers: admin() })).json() as KeyBody[];
    assert.deepEqual(listed.find((key) => key.id === grandchild.id)!.creator, { kind: 'api_key', id: child.id, name: 'child key' });
    assert.equal(listed.find((key) => key.id === byUser.id)!.creator.kind, 'user');
    assert.ok(listed.find((key) => key.id === byUser.id)!.creator.name, 'the user\'s name');

    const revoked = await ctx.app.inject({ method: 'DELETE', url: `/api/v2/admin/api-keys/${root.id}`, headers: admin() });
    assert.equal(revoked.statusCode, 204);
    for (const key of [root, child, grandchild]) assert.equal((await use(key.key)).statusCode, 401, key.name);
    for (const key of [otherMaker, sibling, byUser]) assert.equal((await use(key.key)).statusCode, 200, key.name);
    const { rows } = await ctx.db.query<{ id: number; revoked_at: Date | null }>(`SELECT id, revoked_at FROM api_keys WHERE id = ANY($1) ORDER BY id`, [[root.id, child.id, grandchild.id]]);
    assert.equal(new Set(rows.map((row) => row.revoked_at?.getTime())).size, 1, 'one statement, one time');
    const audit = await ctx.db.query<{ target_id: string; detail: { cascade_from?: number } | null }>(`SELECT target_id, detail FROM admin_audit WHERE action = 'revoke' AND target_id = ANY($1) ORDER BY id`, [[root.id, child.id, grandchild.id].map(String)]);
    assert.deepEqual(audit.rows.map((row) => [Number(row.target_id), row.detail?.cascade_from ?? null]).sort(), [[root.id, null], [child.id, root.id], [grandchild.id, root.id]].sort());
    // Revoking again: nothing more to revoke, nothing more audited.
    assert.equal((await ctx.app.inject({ method: 'DELETE', url: `/api/v2/admin/api-keys/${root.id}`, headers: admin() })).statusCode, 204);
    assert.equal((await ctx.db.query(`SELECT 1 FROM admin_audit WHERE action = 'revoke' AND target_id = ANY($1)`, [[root.id, child.id, grandchild.id].map(String)])).rowCount, 3);
  });

  test('a key made while its maker\'s ancestor is being revoked is revoked too: the revocation waits for it', async () => {
    const root = await createKey(admin(), { name: 'race root', role: 'admin' });
    const child = await createKey(bearer(root.key), { name: 'race child', role: 'admin' });
    let revocation: Promise<unknown> | undefined;
    const late = newApiKey();
    // A creation by the child in flight: it holds the tree's lock, as createApiKey does, while the revocation starts.
    await ctx.db.transaction(async (tx) => {
      await lockApiKeyTree(tx);
      revocation = revokeApiKeyById(ctx.db, root.id, 'cli', ctx.clock.now());
      await waitForAdvisoryLockWaiter(ctx);
      await insertApiKey(tx, { name: 'made during the revocation', hash: hashApiKey(late), prefix: shownPrefixOf(late), role: 'admin', marketplaceCode: null, sellerId: null, createdBy: `api_key:${child.id}`, now: ctx.clock.now(), expiresAt: null });
    });
    const { cascaded } = (await revocation) as { cascaded: number[] };
    assert.equal(cascaded.length, 2, 'the child and the key it made meanwhile');
    assert.equal((await use(late)).statusCode, 401);
    // And the other way round: a key whose maker was revoked first cannot make keys any more.
    assert.equal((await create(bearer(child.key), { name: 'after', role: 'admin' })).statusCode, 401);
  });

  test('last use is written at most once per resolution per key, not once per request, even for requests at the same moment', async () => {
    const key = await createKey(admin(), { name: 'busy', role: 'seller', seller_id: 1 });
    // Every write of the key's row counted, also one that would write the same value (this test database only).
    await ctx.db.query(`CREATE TABLE key_writes (id integer)`);
    await ctx.db.query(`CREATE FUNCTION count_key_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO key_writes VALUES (NEW.id); RETURN NEW; END $$`);
    await ctx.db.query(`CREATE TRIGGER count_key_writes AFTER UPDATE ON api_keys FOR EACH ROW EXECUTE FUNCTION count_key_write()`);
    const writes = async () => Number((await ctx.db.query<{ n: string }>(`SELECT count(*) AS n FROM key_writes WHERE id = $1`, [key.id])).rows[0]!.n);
    const lastUsed = async () => (await ctx.db.query<{ last_used_at: Date | null }>(`SELECT last_used_at FROM api_keys WHERE id = $1`, [key.id])).rows[0]!.last_used_at;
    const burst = async () => (await Promise.all(Array.from({ length: 20 }, () => use(key.key)))).forEach((response) => assert.equal(response.statusCode, 200));
    const first = ctx.clock.now();
    await burst();
    assert.equal(await writes(), 1, '20 requests at once, one write');
    assert.equal((await lastUsed())?.getTime(), first.getTime());
    ctx.clock.advance((ctx.config.API_KEY_LAST_USED_RESOLUTION_SECONDS - 1) * 1000);
    await burst();
    assert.equal(await writes(), 1, 'no write within the resolution');
    ctx.clock.advance(1000);
    await burst();
    assert.equal(await writes(), 2);
    assert.equal((await lastUsed())?.getTime(), ctx.clock.now().getTime());
    const shown = (await ctx.app.inject({ url: `/api/v2/admin/api-keys/${key.id}`, headers: admin() })).json() as KeyBody;
    assert.equal(shown.last_used_at, ctx.clock.now().toISOString());
  });
});

/** Until a session waits for an advisory lock (the revocation, queued behind the creation's lock). */
async function waitForAdvisoryLockWaiter(ctx: TestContext): Promise<void> {
  await waitFor(
    async () => (await ctx.db.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)).rows.length > 0,
    { timeoutMs: 5000, message: 'the revocation never waited for the lock' },
  );
}
