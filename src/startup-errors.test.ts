import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DatabaseUnavailableError } from './db/database.js';
import { describeStartupError } from './startup-errors.js';

const errno = (code: string, extra: Record<string, unknown> = {}) => Object.assign(new Error(code), { code, ...extra });

test('operator mistakes become one line naming the cause; bugs do not', () => {
  assert.match(describeStartupError(new DatabaseUnavailableError(errno('ECONNREFUSED', { address: '10.0.0.5', port: 5432 })))!, /cannot reach the database in DATABASE_URL \(ECONNREFUSED 10\.0\.0\.5:5432\)/);
  assert.match(describeStartupError(errno('28P01'))!, /refused the login/);
  assert.match(describeStartupError(errno('EADDRINUSE', { address: '0.0.0.0', port: 8080 }))!, /cannot listen on 0\.0\.0\.0:8080: the port is already in use/);
  assert.match(describeStartupError(errno('EACCES', { syscall: 'listen', address: '0.0.0.0', port: 80 }))!, /permission denied/);
  assert.equal(describeStartupError(new TypeError('x is undefined')), undefined);
  assert.equal(describeStartupError(errno('EACCES', { syscall: 'open' })), undefined);
});
