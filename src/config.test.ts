import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { renderConfigDocs } from './config-docs.js';
import { renderErrorDocs } from './http/errors-docs.js';
import { ConfigError, loadConfig } from './config.js';
import { projectRoot } from './paths.js';

test('defaults apply when the environment is empty', () => {
  const config = loadConfig({});
  assert.equal(config.PORT, 3000);
  assert.equal(config.DATA_DIR, './data');
  assert.equal(config.ACCESS_TOKEN_TTL_SECONDS, 900);
  assert.equal(config.REFRESH_TOKEN_TTL_SECONDS, 604_800);
  assert.equal(config.DATABASE_URL, undefined);
});

test('values are converted from their text', () => {
  const config = loadConfig({ PORT: '8080', DELIVERY_RETRY_JITTER: '0.5', DATABASE_URL: 'postgres://x@y/z' });
  assert.equal(config.PORT, 8080);
  assert.equal(config.DELIVERY_RETRY_JITTER, 0.5);
  assert.equal(config.DATABASE_URL, 'postgres://x@y/z');
});

test('a wrong value stops start-up with a message naming every bad variable', () => {
  assert.throws(
    () => loadConfig({ PORT: 'eighty', LOG_LEVEL: 'loud', REFRESH_REUSE_GRACE_SECONDS: '-1' }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      for (const name of ['PORT', 'LOG_LEVEL', 'REFRESH_REUSE_GRACE_SECONDS']) assert.match(error.message, new RegExp(`${name}=`));
      return true;
    },
  );
});

test('a number must be written as one: no boolean, hexadecimal or fraction read as an integer', () => {
  for (const [name, value] of [['PORT', 'true'], ['PORT', '0x10'], ['PORT', '3203.7'], ['DELIVERY_CONCURRENCY', '1.5'], ['DELIVERY_RETRY_JITTER', 'true'], ['DELIVERY_RETRY_JITTER', '1e-1']]) {
    assert.throws(() => loadConfig({ [name!]: value }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, new RegExp(`${name}="${value!.replace('.', '\\.')}": must be a (whole|decimal) number`));
      return true;
    }, `${name}=${value}`);
  }
  assert.equal(loadConfig({ DELIVERY_RETRY_JITTER: '0' }).DELIVERY_RETRY_JITTER, 0);
});

test("a duration that feeds a timer stays within a day: past Node's timer limit it would fire at once", () => {
  for (const name of ['DELIVERY_TIMEOUT_MS', 'DELIVERY_POLL_INTERVAL_MS', 'SHUTDOWN_TIMEOUT_MS', 'DATABASE_STATEMENT_TIMEOUT_MS']) {
    assert.throws(() => loadConfig({ [name]: '2147483648' }), new RegExp(`${name}="2147483648"`), name);
  }
  assert.equal(loadConfig({ DELIVERY_TIMEOUT_MS: '86400000' }).DELIVERY_TIMEOUT_MS, 86_400_000);
});

test('a duration that dates are computed from stays within ten years: past that an expiry was an invalid date, and a login a 500', () => {
  for (const name of ['REFRESH_TOKEN_TTL_SECONDS', 'ACCESS_TOKEN_TTL_SECONDS', 'PORTAL_SESSION_TTL_SECONDS', 'WEBHOOK_SECRET_OVERLAP_SECONDS']) {
    assert.throws(() => loadConfig({ [name]: '9000000000000' }), new RegExp(`${name}="9000000000000"`), name);
  }
  for (const name of ['DELIVERY_RETENTION_DAYS', 'AUTH_AUDIT_RETENTION_DAYS']) assert.throws(() => loadConfig({ [name]: '3651' }), new RegExp(name), name);
  assert.equal(loadConfig({ REFRESH_TOKEN_TTL_SECONDS: '315360000' }).REFRESH_TOKEN_TTL_SECONDS, 315_360_000);
});

test('PORTAL_PUBLIC_URL is an absolute http(s) base URL, DATA_DIR is not on /proc or /sys, DATABASE_URL holds no NUL', () => {
  for (const value of ['plaza.example.com', 'javascript:alert(1)', 'notaurl', 'ftp://plaza.example.com', 'https://u:p@plaza.example.com', 'https://plaza.example.com/?a=1', 'https://plaza.example.com/#x']) {
    assert.throws(() => loadConfig({ PORTAL_PUBLIC_URL: value }), /PORTAL_PUBLIC_URL=.*must be the base URL/, value);
  }
  for (const value of ['https://plaza.example.com', 'http://127.0.0.1:3000/', 'https://example.com/plaza']) assert.equal(loadConfig({ PORTAL_PUBLIC_URL: value }).PORTAL_PUBLIC_URL, value);
  for (const value of ['/proc/nope/x', '/sys', '/proc/../proc/x']) assert.throws(() => loadConfig({ DATA_DIR: value }), /DATA_DIR=.*virtual file system/, value);
  for (const value of ['postgres://u@127.0.0.1:5432/db%00x', 'postgres://u@127.0.0.1:5432/db?application_name=%00']) {
    assert.throws(() => loadConfig({ DATABASE_URL: value }), /DATABASE_URL: must not contain a NUL/, value);
  }
});

test('REDIS_URL must be a Redis URL (the client would only fail at the first login)', () => {
  for (const value of ['http://x', 'localhost:6379', 'redis://']) {
    assert.throws(() => loadConfig({ REDIS_URL: value }), /REDIS_URL: must be a Redis URL/, value);
  }
  assert.equal(loadConfig({ REDIS_URL: 'rediss://user:pw@cache.example:6380/2' }).REDIS_URL, 'rediss://user:pw@cache.example:6380/2');
});

test('DATABASE_URL must be one the driver can read: a password with / or # not percent-encoded is named, never echoed', () => {
  for (const value of ['postgres://plaza:ab/cd+ef=@127.0.0.1:5432/plaza', 'postgres://plaza:ab#cd@db:5432/plaza', 'postgres://u:p@127.0.0.1:99999/db', 'postgres://u:p@[::1']) {
    assert.throws(() => loadConfig({ DATABASE_URL: value }), (error: Error) => /DATABASE_URL: is not a valid URL: percent-encode/.test(error.message) && !error.message.includes('cd'), value);
  }
  for (const value of ['postgres://plaza:ab%2Fcd@127.0.0.1:5432/plaza', 'postgres://u:p@/db?host=/var/run/postgresql', 'postgresql:///db?host=/tmp']) {
    assert.equal(loadConfig({ DATABASE_URL: value }).DATABASE_URL, value);
  }
});

test('formats beyond the schema are checked at load too', () => {
  assert.throws(
    () => loadConfig({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8, notacidr', DELIVERY_RETRY_SCHEDULE: '5s,soon' }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /WEBHOOK_ALLOWED_NETWORKS=.*"notacidr" is not a CIDR range/);
      assert.match(error.message, /DELIVERY_RETRY_SCHEDULE=.*"soon" is not a delay/);
      return true;
    },
  );
});

test('maintenance needs a second connection: a pool of one is refused unless MAINTENANCE_INTERVAL_SECONDS is 0', () => {
  assert.throws(() => loadConfig({ DATABASE_POOL_SIZE: '1' }), /DATABASE_POOL_SIZE="1": must be at least 2 while MAINTENANCE_INTERVAL_SECONDS is not 0/);
  assert.equal(loadConfig({ DATABASE_POOL_SIZE: '1', MAINTENANCE_INTERVAL_SECONDS: '0' }).DATABASE_POOL_SIZE, 1);
  assert.equal(loadConfig({ DATABASE_POOL_SIZE: '2' }).MAINTENANCE_INTERVAL_SECONDS, 900);
});

test('docs/configuration.md is generated from the schema and up to date', () => {
  const onDisk = readFileSync(`${projectRoot}docs/configuration.md`, 'utf8');
  assert.equal(onDisk, renderConfigDocs(), 'run `npm run docs:generate` after changing src/config.ts');
});

test('docs/errors.md lists every error code', () => {
  const onDisk = readFileSync(`${projectRoot}docs/errors.md`, 'utf8');
  assert.equal(onDisk, renderErrorDocs(), 'run `npm run docs:generate` after changing src/http/errors.ts');
});

test('PORTAL_FRAME_ANCESTORS takes https origins (http only on loopback), separated by commas or spaces', () => {
  assert.equal(loadConfig({}).PORTAL_FRAME_ANCESTORS, '');
  assert.equal(loadConfig({ PORTAL_FRAME_ANCESTORS: 'https://a.example, https://b.example:8443 http://localhost:3000,http://127.0.0.1:8080' }).PORTAL_FRAME_ANCESTORS, 'https://a.example, https://b.example:8443 http://localhost:3000,http://127.0.0.1:8080');
  for (const value of ['http://a.example', 'https://a.example/', 'https://a.example/admin', '*', 'https://*.example.com', 'a.example', "'self'", 'https://A.example', 'ftp://a.example']) {
    assert.throws(() => loadConfig({ PORTAL_FRAME_ANCESTORS: value }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /PORTAL_FRAME_ANCESTORS=.*is not an https origin/);
      return true;
    }, value);
  }
});
