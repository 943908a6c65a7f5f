import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { test } from 'node:test';
import { DatabaseUnavailableError } from './db/database.js';
import { describeStartupError, listenNamed, ListenError } from './startup-errors.js';

const errno = (code: string, extra: Record<string, unknown> = {}) => Object.assign(new Error(code), { code, ...extra });

test('operator mistakes become one line naming the cause; bugs do not', () => {
  assert.match(describeStartupError(new DatabaseUnavailableError(errno('ECONNREFUSED', { address: '10.0.0.5', port: 5432 })))!, /cannot reach the database in DATABASE_URL \(ECONNREFUSED 10\.0\.0\.5:5432\)/);
  assert.match(describeStartupError(new DatabaseUnavailableError(errno('ENOTFOUND', { hostname: 'db.invalid' })))!, /cannot resolve the database host of DATABASE_URL \(ENOTFOUND db\.invalid\)/);
  assert.match(describeStartupError(errno('28P01'))!, /refused the login/);
  assert.match(describeStartupError(new ListenError('HOST', 'PORT', errno('EADDRINUSE', { address: '0.0.0.0', port: 8080 })))!, /cannot listen on 0\.0\.0\.0:8080: the port is already in use \(set PORT to a free one\)/);
  assert.match(describeStartupError(new ListenError('HOST', 'PORT', errno('EACCES', { syscall: 'listen', address: '0.0.0.0', port: 80 })))!, /permission denied/);
  assert.match(describeStartupError(new Error('The server does not support SSL connections'))!, /does not accept TLS connections, which the URL requires \(sslmode\)/);
  assert.equal(describeStartupError(new TypeError('x is undefined')), undefined);
  assert.equal(describeStartupError(errno('EACCES', { syscall: 'open' })), undefined);
});

test('a listen that fails names the settings of its address, not the database', async () => {
  const taken = createServer().listen(0, '127.0.0.1');
  await once(taken, 'listening');
  const { port } = taken.address() as { port: number };
  const listen = (host: string) => () =>
    new Promise<void>((resolve, reject) => {
      const server = createServer().once('error', reject);
      server.listen(port, host, () => server.close(() => resolve()));
    });
  const inUse = await listenNamed('METRICS_HOST', 'METRICS_PORT', listen('127.0.0.1')).catch((error: unknown) => error);
  assert.match(describeStartupError(inUse)!, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the port is already in use \\(set METRICS_PORT to a free one\\)`));
  const unknown = await listenNamed('--host', '--port', listen('nowhere.invalid')).catch((error: unknown) => error);
  assert.match(describeStartupError(unknown)!, /cannot resolve the address to listen on \((ENOTFOUND|EAI_AGAIN) nowhere\.invalid\); check --host/);
  taken.close();
});
