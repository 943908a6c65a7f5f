import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { after, describe, test } from 'node:test';
import { createFreshDatabase, SHARED_POSTGRES_URL, type FreshDatabase } from '../../src/testing/fresh-database.js';
import { report } from '../../src/testing/plaza-api.js';
import { freePort, killAllPlaza, runPlaza, sharedKeyEnv, startPlaza } from '../../src/testing/plaza-process.js';
import { withDatabase } from '../../src/testing/test-database.js';

/** `plaza serve` as operators run it: its listeners, and how it refuses to start (issue 13, items 5 and 14). */
describe('plaza serve processes', () => {
  const databases: FreshDatabase[] = [];
  const servers: Server[] = [];
  after(async () => {
    await killAllPlaza();
    for (const server of servers) server.close();
    for (const database of databases) await database.drop();
  });
  const freshDatabase = async () => {
    const database = await createFreshDatabase();
    databases.push(database);
    return database;
  };

  test('a worker answers /healthz, /readyz and /metrics (with process and Node.js metrics) on its operations port', async () => {
    const database = await freshDatabase();
    const worker = await startPlaza({ DATABASE_URL: database.url, ...sharedKeyEnv() }, { role: 'worker' });
    assert.equal((await fetch(`${worker.metricsUrl}/healthz`)).status, 200);
    assert.equal((await fetch(`${worker.metricsUrl}/readyz`)).status, 200);
    const metrics = await fetch(`${worker.metricsUrl}/metrics`);
    assert.equal(metrics.status, 200);
    const text = await metrics.text();
    report('worker operations listener', { series: text.split('\n').filter((line) => line && !line.startsWith('#')).length });
    for (const name of ['process_cpu_user_seconds_total', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes', 'plaza_deliveries_due', 'plaza_delivery_attempts_total{outcome="gone"} 0']) {
      assert.ok(text.includes(name), `${name} in the worker's metrics`);
    }
  });

  test('the API port answers 404 for /metrics; the operations port serves it', async () => {
    const database = await freshDatabase();
    const api = await startPlaza({ DATABASE_URL: database.url, ...sharedKeyEnv() }, { role: 'api' });
    const onApi = await fetch(`${api.url}/metrics`);
    assert.equal(onApi.status, 404);
    assert.doesNotMatch(await onApi.text(), /plaza_/);
    const onOperations = await fetch(`${api.metricsUrl}/metrics`);
    assert.equal(onOperations.status, 200);
    assert.match(await onOperations.text(), /plaza_http_request_duration_seconds/);
  });

  const refusal = async (env: Record<string, string>, cause: RegExp) => {
    const started = Date.now();
    // HOST and PORT are set: the refusal must come before anything listens.
    const run = await runPlaza({ ...sharedKeyEnv(), HOST: '127.0.0.1', PORT: String(await freePort()), ...env }, ['serve']);
    const lines = run.stderr.trim().split('\n');
    assert.equal(run.code, 2, run.stderr);
    assert.equal(lines.length, 1, `one line, not a stack:\n${run.stderr}`);
    assert.match(lines[0]!, /^plaza: /);
    assert.match(lines[0]!, cause);
    return Date.now() - started;
  };

  test('DATABASE_URL with another scheme is refused at once, naming the variable', async () => {
    const elapsed = await refusal({ DATABASE_URL: 'mysql://root:hunter2@db/shop' }, /DATABASE_URL.*PostgreSQL URL.*mysql/);
    assert.ok(elapsed < 10_000, `refused in ${elapsed} ms, not after 30 s of retries`);
    report('start-up refusal', { cause: 'DATABASE_URL=mysql://…', exit: 2, ms: elapsed });
  });

  test('a database that does not exist is named', async () => {
    await refusal({ DATABASE_URL: withDatabase(SHARED_POSTGRES_URL, 'plaza_no_such_database') }, /database .*does not exist/);
  });

  test('a port in use is named, and the worker never started', async () => {
    const database = await freshDatabase();
    const busy = createServer();
    servers.push(busy);
    const port = await new Promise<number>((resolve) => busy.listen(0, '127.0.0.1', () => resolve((busy.address() as { port: number }).port)));
    const run = await runPlaza({ DATABASE_URL: database.url, ...sharedKeyEnv(), HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'info' }, ['serve']);
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr.trim(), new RegExp(`^plaza: cannot listen on 127\\.0\\.0\\.1:${port}: the port is already in use`, 'm'));
    assert.doesNotMatch(run.stdout, /delivery worker started/);
    report('start-up refusal', { cause: 'port in use', exit: run.code, line: run.stderr.trim().split('\n').at(-1) });
  });

  test('a retry schedule with an empty entry and an unknown log level are refused with the allowed values', async () => {
    await refusal({ DELIVERY_RETRY_SCHEDULE: '5s,,30s' }, /DELIVERY_RETRY_SCHEDULE="5s,,30s": entry 2 is empty/);
    await refusal({ LOG_LEVEL: 'verbose' }, /LOG_LEVEL="verbose".*allowed: fatal, error, warn, info, debug, trace, silent/);
  });
});
