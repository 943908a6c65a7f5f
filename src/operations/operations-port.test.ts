import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { once } from 'node:events';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { ManualClock } from '../clock.js';
import { loadConfig } from '../config.js';
import { createMetrics } from '../metrics.js';
import { describeStartupError } from '../startup-errors.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import { startOperationsListener } from './operations-listener.js';

// Two development instances on one machine: the second must not stop on the operations port its
// user never chose. A port someone did choose (METRICS_PORT set) still stops the start.
let db: TestDatabase;
let taken: Server;
let takenPort: number;
before(async () => {
  db = await createTestDatabase();
  taken = createServer().listen(0, '127.0.0.1');
  await once(taken, 'listening');
  takenPort = (taken.address() as { port: number }).port;
});
after(async () => {
  taken.close();
  await db.close();
});

function capturingLogger() {
  const lines: { level: number; msg: string; metricsPort?: number; taken?: number }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) });
  return { logger, lines };
}

const deps = (env: Record<string, string>) => ({ config: loadConfig({ METRICS_QUEUE_INTERVAL_SECONDS: '3600', ...env }), db, clock: new ManualClock(new Date()), metrics: createMetrics() });

test('METRICS_PORT unset and its default port taken: a free port instead, with a warning naming it', async () => {
  const { logger, lines } = capturingLogger();
  const operations = await startOperationsListener(deps({}), logger, takenPort);
  try {
    assert.notEqual(operations.port, takenPort);
    assert.ok(operations.port > 0);
    const response = await fetch(`http://127.0.0.1:${operations.port}/healthz`);
    assert.equal(response.status, 200);
    const warning = lines.find((line) => line.level === 40 && line.metricsPort === operations.port);
    assert.ok(warning, JSON.stringify(lines));
    assert.equal(warning.taken, takenPort);
    assert.match(warning.msg, new RegExp(`port ${takenPort} is taken.*on port ${operations.port} instead; set METRICS_PORT`));
  } finally {
    await operations.close();
  }
});

test('METRICS_PORT unset and its default port free: that port, no warning', async () => {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const freePort = (probe.address() as { port: number }).port;
  await new Promise((resolve) => probe.close(resolve));
  const { logger, lines } = capturingLogger();
  const operations = await startOperationsListener(deps({}), logger, freePort);
  try {
    assert.equal(operations.port, freePort);
    assert.equal(lines.filter((line) => line.level >= 40).length, 0);
  } finally {
    await operations.close();
  }
});

test('METRICS_PORT set to a taken port: the start stops, naming METRICS_PORT', async () => {
  const { logger } = capturingLogger();
  const error = await startOperationsListener(deps({ METRICS_PORT: String(takenPort) }), logger).catch((error: unknown) => error);
  assert.match(describeStartupError(error) ?? String(error), /the port is already in use \(set METRICS_PORT to a free one\)/);
});
