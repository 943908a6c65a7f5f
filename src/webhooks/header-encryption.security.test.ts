import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { writeBackup } from '../backup/backup.js';
import { loadConfig } from '../config.js';
import { seedDelivery, seedWebhook } from '../testing/deliveries.js';
import { Receiver } from '../testing/receiver.js';
import { createDeliverer, deliverDue } from '../delivery/dispatch/deliver.js';
import { derivedKeys, loadKeys } from '../keys.js';
import { newSecretsKey } from '../keys/secrets-key.js';
import { rotateSecretsKey } from '../keys/rotate-secrets-key.js';
import { accessTokenFor, bearer, seedMarketplace, seedUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { openHeaders } from '../keys/header-box.js';

// Webhook header values are often a receiver's credentials: never in clear in the database or a
// backup, and still sent as given.
describe('webhook header values at rest', () => {
  let ctx: TestContext;
  let receiver: Receiver;
  let auth: { authorization: string };
  const dir = mkdtempSync(join(tmpdir(), 'plaza-headers-'));
  before(async () => {
    ctx = await createTestApp({ DELIVERY_TIMEOUT_MS: '2000' });
    receiver = await Receiver.start();
    await seedMarketplace(ctx.db, 'mkt');
    auth = bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { role: 'admin' })));
  });
  after(async () => {
    await receiver.close();
    await ctx.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The whole stored row as text, every column. */
  const rawRow = async (code: string) => (await ctx.db.query<{ raw: string }>(`SELECT row_to_json(w)::text AS raw FROM webhooks w WHERE code = $1`, [code])).rows[0]!.raw;

  const deliverOne = async (webhook: { id: number; code: string; marketplaceCode: string }) => {
    await seedDelivery(ctx.db, { ...webhook, secret: '' }, { now: ctx.clock.now() });
    const deliverer = createDeliverer({ ...ctx, workerId: `headers-${webhook.code}` });
    try {
      const [result] = await deliverDue(deliverer);
      assert.equal(result?.outcome, 'succeeded', JSON.stringify(result?.send));
    } finally {
      await deliverer.close();
    }
    return receiver.requests.at(-1)!;
  };

  test('set through the API: not in the database nor in a backup in clear; shown to the owner and sent as given', async () => {
    const created = await ctx.app.inject({
      method: 'POST', url: '/v1/mkt/webhooks', headers: auth,
      payload: { code: 'creds', name: 'Creds', topic: 'publication/update', callback_url: receiver.url(), headers: { Authorization: 'Bearer first-credential-4f1c' } },
    });
    assert.equal(created.statusCode, 201, created.body);
    assert.deepEqual(created.json().headers, { Authorization: 'Bearer first-credential-4f1c' });
    assert.doesNotMatch(await rawRow('creds'), /first-credential/);

    const changed = await ctx.app.inject({ method: 'PATCH', url: '/v1/mkt/webhooks/creds', headers: auth, payload: { headers: { 'X-Api-Key': 'second-credential-9a7e' } } });
    assert.equal(changed.statusCode, 200, changed.body);
    assert.deepEqual(changed.json().headers, { 'X-Api-Key': 'second-credential-9a7e' });
    assert.doesNotMatch(await rawRow('creds'), /second-credential|first-credential/);
    const read = await ctx.app.inject({ method: 'GET', url: '/v1/mkt/webhooks/creds', headers: auth });
    assert.deepEqual(read.json().headers, { 'X-Api-Key': 'second-credential-9a7e' });
    const listed = await ctx.app.inject({ method: 'GET', url: '/v1/mkt/webhooks', headers: auth });
    assert.deepEqual(listed.json().find((item: { code: string }) => item.code === 'creds').headers, { 'X-Api-Key': 'second-credential-9a7e' });

    const id = Number((await ctx.db.query<{ id: number }>(`SELECT id FROM webhooks WHERE code = 'creds'`)).rows[0]!.id);
    const sent = await deliverOne({ id, code: 'creds', marketplaceCode: 'mkt' });
    assert.equal(sent.headers['x-api-key'], 'second-credential-9a7e');
    const tested = await ctx.app.inject({ method: 'POST', url: '/v1/mkt/webhooks/creds/test', headers: auth });
    assert.equal(tested.json().success, true, tested.body);
    assert.equal(receiver.requests.at(-1)!.headers['x-api-key'], 'second-credential-9a7e');

    const file = join(dir, 'plaza.backup.gz');
    await writeBackup(ctx.db.url, file);
    const backup = gunzipSync(readFileSync(file)).toString();
    assert.match(backup, /creds/);
    assert.doesNotMatch(backup, /second-credential|first-credential/);
  });

  test('stored in clear (before this version, or by a previous-release process) is sealed at the next start and still sent', async () => {
    const legacy = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url(), code: 'legacy', headers: { 'X-Api-Key': 'legacy-credential-77d2' } });
    assert.match(await rawRow('legacy'), /legacy-credential/);
    // A process starting on this database, with its SECRETS_KEY.
    const config = loadConfig({ LOG_LEVEL: 'silent', SECRETS_KEY: ctx.keys.secrets.key.toString('base64') });
    await loadKeys({ ...config, DATA_DIR: dir }, ctx.db, ctx.clock);
    assert.doesNotMatch(await rawRow('legacy'), /legacy-credential/);
    const read = await ctx.app.inject({ method: 'GET', url: '/v1/mkt/webhooks/legacy', headers: auth });
    assert.deepEqual(read.json().headers, { 'X-Api-Key': 'legacy-credential-77d2' });
    assert.equal((await deliverOne(legacy)).headers['x-api-key'], 'legacy-credential-77d2');
  });

  test('a SECRETS_KEY rotation re-encrypts them: they open under the new key only', async () => {
    const next = newSecretsKey();
    const stored = async () => (await ctx.db.query<{ headers: Record<string, string>; headers_encrypted: string | null }>(`SELECT headers, headers_encrypted FROM webhooks WHERE code = 'creds'`)).rows[0]!;
    const before = await stored();
    await rotateSecretsKey(ctx.db, ctx.keys.secrets, next, ctx.clock.now());
    const moved = await stored();
    assert.notEqual(moved.headers_encrypted, before.headers_encrypted);
    assert.deepEqual(openHeaders(derivedKeys(next).webhookSecretsKey, moved), { 'X-Api-Key': 'second-credential-9a7e' });
    assert.throws(() => openHeaders(ctx.keys.webhookSecretsKey, moved));
  });
});
