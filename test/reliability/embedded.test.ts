import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { once } from 'node:events';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { isAlive } from '../../src/db/embedded/processes.js';
import { STRONG_PASSWORD } from '../../src/testing/fixtures.js';
import { call, createWebhook, inParallel, login, orderEvent, report, scaled, sendEvent } from '../../src/testing/plaza-api.js';
import { freePort, killAllPlaza, runPlaza, sharedKeyEnv, startPlaza, type PlazaProcess } from '../../src/testing/plaza-process.js';
import { postmastersUnder } from '../../src/testing/postmasters.js';
import { Receiver } from '../../src/testing/receiver.js';
import { waitFor } from '../../src/testing/wait.js';

const EVENTS = scaled(200);
const root = mkdtempSync(join(tmpdir(), 'plaza-rel-embedded-'));
// Run as root, the server runs as the `postgres` user, which must be able to reach DATA_DIR below this.
chmodSync(root, 0o711);
let receiver: Receiver | undefined;
after(async () => {
  await killAllPlaza();
  await receiver?.down();
  for (const pid of postmasters()) process.kill(pid, 'SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

const postmasters = () => postmastersUnder(root);

const state = (dataDir: string) => JSON.parse(readFileSync(join(dataDir, 'postgres.state.json'), 'utf8')) as { pid: number; postmasterPid: number };

/** Files and directories anyone but the owner can access. */
function exposed(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .map((entry) => join(entry.parentPath, entry.name))
    .concat(dir)
    .filter((path) => !statSync(path).isSocket() && (statSync(path).mode & 0o077) !== 0);
}

describe('the embedded PostgreSQL server', () => {
  // No DATABASE_URL anywhere below: Plaza runs its own server in DATA_DIR, as after `npm ci && npm start`.
  const dataDir = join(root, 'data');
  const env = { DATA_DIR: dataDir, LOG_LEVEL: 'info', ...sharedKeyEnv(), DELIVERY_RETRY_SCHEDULE: Array.from({ length: 20 }, () => '1s').join(',') };
  let plaza: PlazaProcess;

  test('first start initialises the cluster (one log line) in a private DATA_DIR; the CLI and --role api use the running server; a second owner is refused', { timeout: 600_000 }, async () => {
    plaza = await startPlaza(env);
    assert.match(plaza.output(), /first start: initialised the embedded PostgreSQL cluster in \S+ \(\d+ ms\)/);
    assert.equal(statSync(dataDir).mode & 0o777, 0o700);
    assert.deepEqual(exposed(dataDir), [], 'DATA_DIR 0700, every file in it 0600');
    assert.equal(state(dataDir).pid, plaza.child.pid);

    // The CLI while the server runs: it connects to the running server.
    for (const args of [['marketplaces', 'add', 'MKT', '--name', 'Market'], ['sellers', 'add', '1', '--name', 'Seller'], ['connections', 'add', '--seller', '1', '--marketplace', 'MKT']]) {
      const result = await runPlaza(env, args);
      assert.equal(result.code, 0, result.stderr);
    }
    const added = await runPlaza(env, ['users', 'add', 'alice', '--seller', '1'], `${STRONG_PASSWORD}\n`);
    assert.equal(added.code, 0, added.stderr);
    await login(plaza.url, 'alice', STRONG_PASSWORD);

    const api = await startPlaza(env, { role: 'api' });
    await login(api.url, 'alice', STRONG_PASSWORD);
    assert.equal((await api.kill('SIGTERM')).code, 0);

    const second = await runPlaza({ ...env, PORT: String(await freePort()) }, ['serve']);
    assert.equal(second.code, 2, second.stderr);
    assert.match(second.stderr, new RegExp(`already run by process ${plaza.child.pid}\\b`));
    assert.ok(plaza.isRunning(), 'the owner keeps running');
    assert.deepEqual(postmasters(), [state(dataDir).postmasterPid], 'one server');
  });

  test('kill -9 of Plaza, then a restart: the orphaned server is adopted and no accepted event is lost', { timeout: 600_000 }, async () => {
    receiver = new Receiver();
    await receiver.up();
    await receiver.down();
    const { token } = await login(plaza.url, 'alice', STRONG_PASSWORD);
    await createWebhook(plaza.url, token, 'MKT', { code: 'orders', topic: 'order/update', callback_url: receiver.url() });
    const accepted = await inParallel(Array.from({ length: EVENTS }, (_, i) => i), 4, async (i) => {
      const response = await sendEvent(plaza.url, token, 'MKT', orderEvent(1, `ORD-${i}`, 1));
      assert.equal(response.status, 202, response.text);
      return `ORD-${i}`;
    });
    const orphan = state(dataDir).postmasterPid;
    assert.equal((await plaza.kill('SIGKILL')).signal, 'SIGKILL');
    assert.ok(isAlive(orphan), 'the server outlives a killed Plaza');

    await receiver.up();
    plaza = await startPlaza(env);
    assert.match(plaza.output(), /adopting the embedded PostgreSQL server/);
    assert.doesNotMatch(plaza.output(), /initialised/, 'a later start reuses the cluster');
    assert.equal(state(dataDir).postmasterPid, orphan);
    await waitFor(() => receiver!.distinctIds().size >= accepted.length, { timeoutMs: 120_000, message: () => `delivered ${receiver!.distinctIds().size} of ${accepted.length}` });
    const delivered = new Set(receiver.requests.map((r) => (r.json as { entity_id: string }).entity_id));
    const lost = accepted.filter((entity) => !delivered.has(entity));
    assert.deepEqual(lost, []);
    report('embedded kill -9', { acceptedBeforeKill: accepted.length, delivered: delivered.size, lost: lost.length });
  });

  test('kill -9 of the postgres processes while delivering: 503 with Retry-After meanwhile, then Plaza restarts the server by itself and no accepted event is lost', { timeout: 600_000 }, async () => {
    // Claims and attempt records commit without waiting for the WAL (docs/delivery.md): a crash of the
    // server may undo the last of them, which may repeat a notification but must lose none.
    const { token } = await login(plaza.url, 'alice', STRONG_PASSWORD);
    receiver!.requests.length = 0;
    receiver!.setDelay(100);
    const accepted = await inParallel(Array.from({ length: EVENTS }, (_, i) => i), 4, async (i) => {
      const response = await sendEvent(plaza.url, token, 'MKT', orderEvent(1, `CRASH-${i}`, 1));
      assert.equal(response.status, 202, response.text);
      return `CRASH-${i}`;
    });
    await waitFor(() => receiver!.requests.length >= 20, { timeoutMs: 60_000, message: () => `only ${receiver!.requests.length} arrived` });
    const arrivedBeforeKill = receiver!.distinctIds().size;
    const postmaster = state(dataDir).postmasterPid;
    const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
    for (const pid of [postmaster, ...children]) process.kill(pid, 'SIGKILL');

    const body = { username: 'alice', password: STRONG_PASSWORD };
    let unavailable: { status: number; retryAfter: string | null } | undefined;
    await waitFor(async () => {
      const response = await call(plaza.url, 'POST', '/api/v2/auth/login', { body });
      if (response.status === 503) unavailable ??= { status: 503, retryAfter: response.headers.get('retry-after') };
      return unavailable !== undefined && response.status === 200;
    }, { timeoutMs: 120_000, message: () => `no 503 then recovery; output:\n${plaza.output().slice(-3000)}` });
    assert.equal(unavailable?.retryAfter, '5');
    assert.ok(plaza.isRunning());
    // The server accepts connections a moment before Plaza's wait for it returns and logs: a login
    // can succeed before the line is written.
    await waitFor(() => /the embedded PostgreSQL server is running again/.test(plaza.output()), { timeoutMs: 10_000, message: () => `no "running again" line; output:\n${plaza.output().slice(-3000)}` });
    assert.notEqual(state(dataDir).postmasterPid, postmaster);

    const arrived = () => new Set(receiver!.requests.map((r) => (r.json as { entity_id: string }).entity_id));
    await waitFor(() => accepted.every((entity) => arrived().has(entity)), { timeoutMs: 120_000, message: () => `delivered ${accepted.filter((entity) => arrived().has(entity)).length} of ${accepted.length}` });
    const lost = accepted.filter((entity) => !arrived().has(entity));
    assert.deepEqual(lost, []);
    receiver!.setDelay(0);
    report('embedded kill -9 of postgres while delivering', { accepted: accepted.length, arrivedBeforeKill, duplicates: receiver!.duplicates(), lost: lost.length });
  });

  test('SIGTERM stops the server too; a later start reuses the cluster; the CLI alone starts and stops it', { timeout: 600_000 }, async () => {
    assert.equal((await plaza.kill('SIGTERM')).code, 0);
    assert.deepEqual(postmasters(), [], 'no postgres process left behind');
    assert.equal(existsSync(join(dataDir, 'postgres.state.json')), false);

    const started = Date.now();
    plaza = await startPlaza(env);
    const restartMs = Date.now() - started;
    assert.doesNotMatch(plaza.output(), /initialised|adopting/);
    await login(plaza.url, 'alice', STRONG_PASSWORD);
    assert.equal((await plaza.kill('SIGTERM')).code, 0);

    const cli = await runPlaza(env, ['users', 'set-active', 'alice', 'false']);
    assert.equal(cli.code, 0, cli.stderr);
    assert.deepEqual(postmasters(), [], 'the CLI stops the server it started');
    report('embedded restart', { restartToReadyMs: restartMs });
  });

  test('a DATA_DIR or keys.json readable by others, and an old PGlite layout, stop the start with the fix', { timeout: 600_000 }, async () => {
    const ownKeys = { DATA_DIR: dataDir, PORT: String(await freePort()) };
    chmodSync(dataDir, 0o755);
    const openDir = await runPlaza(ownKeys, ['migrate']);
    assert.equal(openDir.code, 2, openDir.stderr);
    assert.match(openDir.stderr, new RegExp(`${dataDir} is readable by group or others \\(mode 0755\\).*chmod 700 ${dataDir}`));
    chmodSync(dataDir, 0o700);

    // keys.json comes from a first serve without JWT_PRIVATE_KEY/SECRETS_KEY, in a DATA_DIR of its
    // own: the earlier tests' database holds secrets under their shared SECRETS_KEY, which a start
    // with other keys rightly refuses.
    const freshKeys = { DATA_DIR: join(root, 'fresh-keys'), PORT: String(await freePort()) };
    const keysPath = join(freshKeys.DATA_DIR, 'keys.json');
    const first = await startPlaza(freshKeys);
    assert.equal((await first.kill('SIGTERM')).code, 0);
    assert.equal(statSync(keysPath).mode & 0o777, 0o600);
    chmodSync(keysPath, 0o644);
    const openKeys = await runPlaza(freshKeys, ['serve']);
    assert.equal(openKeys.code, 2, openKeys.stderr);
    assert.match(openKeys.stderr, new RegExp(`${keysPath} is readable by group or others.*chmod 600 ${keysPath}`));
    assert.deepEqual(postmasters(), []);

    const legacy = join(root, 'legacy');
    mkdirSync(join(legacy, 'pgdata'), { recursive: true, mode: 0o700 });
    chmodSync(legacy, 0o700);
    const refused = await runPlaza({ DATA_DIR: legacy }, ['migrate']);
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, /pgdata is a database of the old embedded engine \(PGlite\)/);
  });
});

test('SIGTERM while a client trickles a request body: its connection is cut after SHUTDOWN_TIMEOUT_MS, the process exits 0 and stops its server', { timeout: 120_000 }, async () => {
  const dataDir = join(root, 'trickle');
  const plaza = await startPlaza({ DATA_DIR: dataDir, LOG_LEVEL: 'info', ...sharedKeyEnv(), SHUTDOWN_TIMEOUT_MS: '1000' });
  // No credentials needed: a login whose body never completes.
  const socket = connect(plaza.port!, '127.0.0.1');
  socket.on('error', () => {});
  await once(socket, 'connect');
  socket.write('POST /api/v2/auth/login HTTP/1.1\r\nHost: plaza.test\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{');
  const trickle = setInterval(() => socket.write(' '), 100);
  try {
    await new Promise((resolve) => setTimeout(resolve, 300));
    const signalledAt = Date.now();
    const exit = await plaza.kill('SIGTERM');
    const stopMs = Date.now() - signalledAt;
    assert.equal(exit.code, 0, plaza.output().slice(-3000));
    // Well before the last-resort exit (SHUTDOWN_TIMEOUT_MS + 5 s), which skips closing the database.
    assert.ok(stopMs < 4000, `stopped in ${stopMs} ms`);
    assert.match(plaza.output(), /requests still in flight after SHUTDOWN_TIMEOUT_MS; closing their connections/);
    assert.deepEqual(postmastersUnder(dataDir), [], 'no postgres left running');
  } finally {
    clearInterval(trickle);
    socket.destroy();
  }
});
