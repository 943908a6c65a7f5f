import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { signatureMatches } from '../../src/delivery/dispatch/signature.js';
import { OTHER_STRONG_PASSWORD, STRONG_PASSWORD } from '../../src/testing/fixtures.js';
import { secretKeyBytes } from '../../src/keys/secret-box.js';
import { call, createWebhook, login, orderEvent, report, sendEvent } from '../../src/testing/plaza-api.js';
import { killAllPlaza, runPlaza, sharedKeyEnv, startPlaza, type PlazaProcess } from '../../src/testing/plaza-process.js';
import { postmastersUnder } from '../../src/testing/postmasters.js';
import { Receiver } from '../../src/testing/receiver.js';
import { waitFor } from '../../src/testing/wait.js';

const root = mkdtempSync(join(tmpdir(), 'plaza-rel-backup-'));
// Run as root, the server runs as the `postgres` user, which must be able to reach DATA_DIR below this.
chmodSync(root, 0o711);
const receiver = new Receiver();
after(async () => {
  await killAllPlaza();
  await receiver.down();
  rmSync(root, { recursive: true, force: true });
});

const postmasters = () => postmastersUnder(root);

const manifestOf = (path: string) => JSON.parse(gunzipSync(readFileSync(path)).toString().split('\n')[0]!) as { tables: Array<{ name: string; rows: number }> };

describe('plaza backup and restore on the embedded server', () => {
  // No DATABASE_URL: Plaza runs its own PostgreSQL server in DATA_DIR.
  const dataDir = join(root, 'data');
  const file = join(root, 'plaza.backup.gz');
  const env = { DATA_DIR: dataDir, ...sharedKeyEnv() };
  let plaza: PlazaProcess;

  test('backup while serving, restore refused while serving, restore after stop brings back exactly the snapshot', { timeout: 600_000 }, async () => {
    await receiver.up();
    plaza = await startPlaza(env);
    for (const args of [['marketplaces', 'add', 'MKT', '--name', 'Market'], ['sellers', 'add', '1', '--name', 'Seller'], ['connections', 'add', '--seller', '1', '--marketplace', 'MKT']]) {
      const result = await runPlaza(env, args);
      assert.equal(result.code, 0, result.stderr);
    }
    assert.equal((await runPlaza(env, ['users', 'add', 'alice', '--seller', '1', '--role', 'admin'], `${STRONG_PASSWORD}\n`)).code, 0);
    const { token } = await login(plaza.url, 'alice', STRONG_PASSWORD);
    const hook = await createWebhook(plaza.url, token, 'MKT', { code: 'orders', topic: 'order/update', callback_url: receiver.url() });
    const secret = (hook.json as { secret: string }).secret;
    for (let i = 0; i < 20; i++) assert.equal((await sendEvent(plaza.url, token, 'MKT', orderEvent(1, `ORD-${i}`, 1))).status, 202);
    await waitFor(() => receiver.distinctIds().size >= 20, { timeoutMs: 60_000, message: () => `delivered ${receiver.distinctIds().size} of 20` });

    const started = Date.now();
    const backup = await runPlaza(env, ['backup', file]);
    const backupMs = Date.now() - started;
    assert.equal(backup.code, 0, backup.stderr);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.ok(plaza.isRunning(), 'the service kept running during the backup');

    const refused = await runPlaza(env, ['restore', file]);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, new RegExp(`Refusing to restore: .* in use by process ${plaza.child.pid}\\b`));

    // After the backup: a user and events that the restore must take away.
    assert.equal((await runPlaza(env, ['users', 'add', 'bob', '--seller', '1'], `${OTHER_STRONG_PASSWORD}\n`)).code, 0);
    for (let i = 20; i < 25; i++) assert.equal((await sendEvent(plaza.url, token, 'MKT', orderEvent(1, `ORD-${i}`, 1))).status, 202);
    assert.equal((await plaza.kill('SIGTERM')).code, 0);

    const restoreStarted = Date.now();
    const restored = await runPlaza(env, ['restore', file]);
    const restoreMs = Date.now() - restoreStarted;
    assert.equal(restored.code, 0, restored.stderr);
    assert.match(restored.stdout, /Restored .* rows\./);
    assert.deepEqual(postmasters(), [], 'restore stops the server it started');
    assert.equal(existsSync(join(dataDir, 'postgres.state.json')), false);
    // A second backup of the restored database counts exactly the rows of the first (events, deliveries, users…).
    const check = join(root, 'check.backup.gz');
    assert.equal((await runPlaza(env, ['backup', check])).code, 0);
    const counts = (path: string) => Object.fromEntries(manifestOf(path).tables.map((t) => [t.name, t.rows]));
    assert.deepEqual(counts(check), counts(file));
    assert.ok(counts(file).deliveries! >= 20 && counts(file).events! >= 20);

    plaza = await startPlaza(env);
    const again = await login(plaza.url, 'alice', STRONG_PASSWORD);
    assert.equal((await call(plaza.url, 'POST', '/api/v2/auth/login', { body: { username: 'bob', password: OTHER_STRONG_PASSWORD } })).status, 401, 'bob came after the backup');
    // The event ids of the snapshot are known again (idempotency), and a new one is delivered signed
    // with the restored, still decryptable webhook secret.
    const before = receiver.requests.length;
    assert.equal((await sendEvent(plaza.url, again.token, 'MKT', orderEvent(1, 'ORD-after', 1))).status, 202);
    await waitFor(() => receiver.requests.length > before, { timeoutMs: 60_000, message: 'the event after the restore was not delivered' });
    const request = receiver.requests.at(-1)!;
    const signed = signatureMatches(String(request.headers['webhook-signature']), secretKeyBytes(secret), String(request.headers['webhook-id']), Number(request.headers['webhook-timestamp']), request.body);
    assert.ok(signed, 'signed with the secret created before the backup');
    assert.equal((request.json as { entity_id: string }).entity_id, 'ORD-after');
    report('embedded backup/restore', { events: 20, backupMs, restoreMs, fileBytes: statSync(file).size });
    assert.equal((await plaza.kill('SIGTERM')).code, 0);
  });
});
