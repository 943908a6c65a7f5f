import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { loadConfig, type Config } from '../config.js';
import { accessTokenFor, bearer, seedMarketplace, seedUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { checkCode, normalizeSellerId } from '../webhooks/webhook-validators.js';
import { runInProcess } from '../testing/cli.js';

// Issue 35: the CLI refused ids over nine digits while the API takes every positive int32, and
// worded the rule of codes its own way.
describe('an id and a code mean the same to the CLI and to the API', () => {
  let ctx: TestContext;
  let config: Config;
  let admin: Record<string, string>;
  const LARGEST = 2_147_483_647;
  before(async () => {
    ctx = await createTestApp();
    config = loadConfig({ LOG_LEVEL: 'silent', SECRETS_KEY: randomBytes(32).toString('base64') });
    admin = bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { role: 'admin' })));
    await seedMarketplace(ctx.db, 'meli');
  });
  after(() => ctx.close());
  const plaza = (args: string[]) => runInProcess(args, { db: ctx.db, config, now: ctx.clock.now() });

  test('the largest int32 seller id: the CLI creates and connects it, the API reads it and takes its text as a seller_id of a webhook or of a portal link', async () => {
    const added = await plaza(['sellers', 'add', String(LARGEST), '--name', 'Largest']);
    assert.equal(added.code, 0, added.stderr);
    const connected = await plaza(['connections', 'add', '--seller', String(LARGEST), '--marketplace', 'meli']);
    assert.equal(connected.code, 0, connected.stderr);
    const read = await ctx.app.inject({ url: `/api/v2/admin/sellers/${LARGEST}`, headers: admin });
    assert.equal(read.statusCode, 200, read.body);
    assert.deepEqual(normalizeSellerId(String(LARGEST)), { ok: true, value: String(LARGEST) });
    const link = await ctx.app.inject({ method: 'POST', url: '/v1/meli/portal-links', headers: admin, payload: { seller_id: String(LARGEST) } });
    assert.equal(link.statusCode, 201, link.body);
  });

  test('the next one: the CLI refuses it before it opens the database, as the API does', async () => {
    const next = String(LARGEST + 1);
    for (const args of [['sellers', 'add', next, '--name', 'Too large'], ['connections', 'add', '--seller', next, '--marketplace', 'meli'], ['api-keys', 'revoke', next]]) {
      const run = await plaza(args);
      assert.equal(run.code, 2, args.join(' '));
      assert.match(run.stderr, /must be a positive integer up to 2147483647\./);
      assert.equal(run.openedDatabase, false);
    }
    const read = await ctx.app.inject({ url: `/api/v2/admin/sellers/${next}`, headers: admin });
    assert.equal(read.statusCode, 400, read.body);
    const created = await ctx.app.inject({ method: 'POST', url: '/api/v2/admin/sellers', headers: admin, payload: { id: LARGEST + 1, name: 'Too large' } });
    assert.equal(created.statusCode, 400, created.body);
    assert.equal(normalizeSellerId(next).ok, false);
    const link = await ctx.app.inject({ method: 'POST', url: '/v1/meli/portal-links', headers: admin, payload: { seller_id: next } });
    assert.equal(link.statusCode, 400, link.body);
    assert.deepEqual(link.json().errors, [{ field: 'body.seller_id', message: 'must be at most 2147483647' }]);
  });

  test('a marketplace code: 100 characters are one for both, 101 are refused by both, with the one wording', async () => {
    const longest = 'm'.repeat(100);
    assert.equal((await plaza(['marketplaces', 'add', longest, '--name', 'Longest'])).code, 0);
    assert.equal((await ctx.app.inject({ url: `/api/v2/admin/marketplaces/${longest}`, headers: admin })).statusCode, 200);
    const tooLong = `${longest}m`;
    const run = await plaza(['marketplaces', 'add', tooLong, '--name', 'Too long']);
    const rule = checkCode(tooLong);
    assert.equal(rule.ok, false);
    assert.equal(run.code, 2);
    assert.ok(!rule.ok && run.stderr.includes(`<code> ${rule.message}.`), run.stderr);
    const created = await ctx.app.inject({ method: 'POST', url: '/api/v2/admin/marketplaces', headers: admin, payload: { code: tooLong, name: 'Too long' } });
    assert.equal(created.statusCode, 400, created.body);
  });
});
