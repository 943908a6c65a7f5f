import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { createWebhook, inParallel, login, orderEvent, report, scaled, sendEvent } from '../support/plaza-api.js';
import { freePort, killAllPlaza, runCli, sharedKeyEnv, startPlaza } from '../support/plaza-process.js';
import { Receiver, waitFor } from '../support/receiver.js';

const EVENTS = scaled(200);
const dataDir = mkdtempSync(join(tmpdir(), 'plaza-rel-embedded-'));
let receiver: Receiver | undefined;
after(async () => {
  await killAllPlaza();
  await receiver?.down();
  rmSync(dataDir, { recursive: true, force: true });
});

test('embedded database: a second process on the data directory is refused; a SIGKILL after accepted events loses none', { timeout: 180_000 }, async () => {
  // No DATABASE_URL: the embedded PGlite database in DATA_DIR, set up with the CLI as a user would.
  const env = { DATA_DIR: dataDir, ...sharedKeyEnv(), DELIVERY_RETRY_SCHEDULE: '1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s' };
  for (const args of [['marketplaces', 'add', 'MKT', '--name', 'Market'], ['sellers', 'add', '1', '--name', 'Seller'], ['connections', 'add', '--seller', '1', '--marketplace', 'MKT']]) {
    const result = await runCli(env, args);
    assert.equal(result.code, 0, result.stderr);
  }
  const added = await runCli(env, ['users', 'add', 'alice', '--seller', '1'], 'alice password 1\n');
  assert.equal(added.code, 0, added.stderr);

  const plaza = await startPlaza(env);
  const second = await runCli({ ...env, PORT: String(await freePort()) }, ['serve']);
  assert.notEqual(second.code, 0, 'a second serve on the same data directory must not start');
  assert.match(second.stderr, new RegExp(`process ${plaza.child.pid}\\b`), `the refusal names the holder:\n${second.stderr}`);
  assert.ok(plaza.isRunning(), 'the holder keeps running');

  // The receiver is down: deliveries stay in the database when the server is killed.
  receiver = new Receiver();
  await receiver.up();
  await receiver.down();
  const { token } = await login(plaza.url, 'alice', 'alice password 1');
  await createWebhook(plaza.url, token, 'MKT', { code: 'orders', topic: 'order/update', callback_url: receiver.url });
  const accepted = await inParallel(Array.from({ length: EVENTS }, (_, i) => i), 4, async (i) => {
    const response = await sendEvent(plaza.url, token, 'MKT', orderEvent(1, `ORD-${i}`, 1));
    assert.equal(response.status, 202, response.text);
    return `ORD-${i}`;
  });
  const killed = await plaza.kill('SIGKILL');
  assert.equal(killed.signal, 'SIGKILL');

  await receiver.up();
  const restarted = await startPlaza(env);
  await waitFor(() => receiver!.distinctIds().size >= accepted.length, 90_000, () => `delivered ${receiver!.distinctIds().size} of ${accepted.length} after the restart`);
  const delivered = new Set(receiver.requests.map((r) => (r.json as { entity_id: string }).entity_id));
  const lost = accepted.filter((entity) => !delivered.has(entity));
  assert.deepEqual(lost, []);
  const stopped = await restarted.kill('SIGTERM');
  assert.equal(stopped.code, 0);
  report('embedded SIGKILL', { acceptedBeforeKill: accepted.length, secondProcessExitCode: second.code, delivered: delivered.size, lost: lost.length });
});
