import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../config.js';
import { loadKeys, type Keys } from '../keys.js';
import { projectRoot } from '../paths.js';
import { exited } from '../testing/child-process.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import { eventually } from '../testing/wait.js';
import { Receiver, seedDelivery, seedWebhook } from '../testing/deliveries.js';

/**
 * A real worker process killed with SIGKILL in the middle of its sends loses nothing: another worker
 * takes its claims once their lease expires. Two processes share the test's database.
 */
describe('a worker killed mid-delivery', () => {
  let db: TestDatabase;
  let keys: Keys;
  let receiver: Receiver;
  let dataDir: string;
  const children: ChildProcess[] = [];

  before(async () => {
    db = await createTestDatabase();
    // Keys in a data directory that the worker processes read too, so they can decrypt the secrets.
    dataDir = mkdtempSync(join(tmpdir(), 'plaza-crash-'));
    keys = await loadKeys(loadConfig({ DATA_DIR: dataDir }));
    receiver = await Receiver.start();
  });
  after(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await receiver?.close();
    await db?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const startWorker = () => {
    const child = spawn(process.execPath, [join(projectRoot, 'dist/src/main.js'), 'serve', '--role', 'worker'], {
      env: {
        ...process.env,
        DATABASE_URL: db.url,
        DATA_DIR: dataDir,
        WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8',
        DELIVERY_LEASE_SECONDS: '5',
        DELIVERY_POLL_INTERVAL_MS: '250',
        DELIVERY_RETRY_SCHEDULE: '1s,1s,1s',
        LOG_LEVEL: 'silent',
        METRICS_PORT: '0',
      },
      stdio: 'ignore',
    });
    children.push(child);
    return child;
  };

  test('after SIGKILL and a restart every delivery succeeds and every webhook-id arrives', { timeout: 90_000 }, async () => {
    // Slow answers, so that the kill lands while sends are in flight.
    receiver.fallback = (_request, response) => setTimeout(() => response.writeHead(200).end(), 400);
    const webhook = await seedWebhook(db, keys, { callbackUrl: receiver.url() });
    const created = [];
    for (let i = 0; i < 24; i++) created.push(await seedDelivery(db, webhook, { now: new Date(), entityKey: `entity-${i % 8}` }));

    const first = startWorker();
    await receiver.waitFor(3);
    first.kill('SIGKILL');
    await exited(first);
    const held = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE status = 'delivering'`);
    assert.ok(held.rows[0]!.n > 0, 'the killed worker held claims');

    const second = startWorker();
    // Then the counts below say what is missing.
    await eventually(async () => {
      const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE status <> 'succeeded'`);
      return rows[0]!.n === 0;
    }, { timeoutMs: 60_000 });
    second.kill('SIGTERM');
    await exited(second);

    const { rows } = await db.query<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM deliveries GROUP BY status`);
    assert.deepEqual(rows, [{ status: 'succeeded', n: created.length }]);
    const arrived = new Set(receiver.requests.map((request) => request.headers['webhook-id']));
    for (const delivery of created) assert.ok(arrived.has(delivery.messageId), `${delivery.messageId} arrived`);
    const leftover = await db.query(`SELECT 1 FROM deliveries WHERE leased_by IS NOT NULL`);
    assert.equal(leftover.rowCount, 0);
  });
});
