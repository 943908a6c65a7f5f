import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { buildApp, type App } from './app.js';
import { loadConfig } from './config.js';
import { generateKeys } from './keys.js';
import { choosePrettyLogs, createLogger } from './logging.js';
import { projectRoot } from './paths.js';
import { closed, untilOutput } from './testing/child-process.js';
import { createTestDatabase, type TestDatabase } from './testing/test-database.js';

/** A log destination that keeps what it is given. */
function sink(): { stream: Writable; text: () => string } {
  let text = '';
  return { stream: new Writable({ write: (chunk, _encoding, done) => ((text += String(chunk)), done()) }), text: () => text };
}

const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

test('JSON lines carry ISO-8601 times', () => {
  const out = sink();
  createLogger({ LOG_LEVEL: 'info', LOG_FORMAT: 'json' }, { stream: out.stream, isTTY: true }).info({ n: 1 }, 'hello');
  const line = JSON.parse(out.text()) as { time: string; msg: string; n: number };
  assert.match(line.time, ISO_TIME);
  assert.equal(line.msg, 'hello');
});

test('pretty lines for LOG_FORMAT=pretty, or auto on a terminal; JSON for auto elsewhere', () => {
  assert.equal(choosePrettyLogs('auto', true), true);
  assert.equal(choosePrettyLogs('auto', false), false);
  assert.equal(choosePrettyLogs('pretty', false), true);
  assert.equal(choosePrettyLogs('json', true), false);

  const out = sink();
  createLogger({ LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' }, { stream: out.stream, isTTY: false }).warn({ user: { password: 'hunter2-secret' } }, 'no user exists yet');
  const text = out.text();
  assert.throws(() => JSON.parse(text), 'a pretty line is not JSON');
  assert.match(text, /^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3} [+-]\d{4}\] WARN: no user exists yet/);
  assert.equal(text.includes('hunter2-secret'), false, 'redaction applies to pretty lines too');
  assert.equal(text.includes('\u001b['), false, 'no colours when the output is not a terminal');

  const requests = sink();
  createLogger({ LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' }, { stream: requests.stream, isTTY: false }).info(
    { reqId: 'r-1', req: { method: 'GET', url: '/v1/x' }, res: { statusCode: 200 }, responseTime: 3.2 },
    'request',
  );
  assert.match(requests.text(), /^\[[^\]]+\] INFO: request GET \/v1\/x → 200 in 3\.2 ms \(req r-1\)\n$/, 'a request is one line for people too');
});

describe('request logging', () => {
  let db: TestDatabase;
  let app: App;
  const out = sink();
  const lines = () =>
    out
      .text()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { level: number; msg: string; reqId: string; req?: { url: string }; res?: { statusCode: number }; responseTime?: number });

  before(async () => {
    db = await createTestDatabase();
    const config = loadConfig({ LOG_LEVEL: 'debug', LOG_FORMAT: 'json' });
    app = await buildApp({ config, db, keys: await generateKeys(), logger: createLogger(config, { stream: out.stream }) });
    await app.ready();
  });
  after(async () => {
    await app.close();
    await db.close();
  });

  test('one line per request at info, with status and duration; probes at debug', async () => {
    const login = await app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username: 'nobody', password: 'Wr0ng-password-here' } });
    assert.equal(login.statusCode, 401);
    const missing = await app.inject({ method: 'GET', url: '/no-such-route' });
    assert.equal(missing.statusCode, 404);
    assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
    assert.equal((await app.inject({ method: 'GET', url: '/readyz?verbose=1' })).statusCode, 200);

    const forLogin = lines().filter((line) => line.reqId === login.headers['x-request-id']);
    assert.equal(forLogin.filter((line) => line.level === 30).length, 1, JSON.stringify(forLogin));
    const [request] = forLogin.filter((line) => line.msg === 'request');
    assert.equal(request?.req?.url, '/api/v2/auth/login');
    assert.equal(request?.res?.statusCode, 401);
    assert.equal(typeof request?.responseTime, 'number');

    // A request refused by validation is one line too, which says why.
    const invalid = await app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username: 'nobody' } });
    assert.equal(invalid.statusCode, 400);
    const forInvalid = lines().filter((line) => line.reqId === invalid.headers['x-request-id']);
    assert.deepEqual(forInvalid.map((line) => [line.msg, line.res?.statusCode, (line as { code?: string }).code]), [['request', 400, 'validation_failed']]);

    const forMissing = lines().filter((line) => line.reqId === missing.headers['x-request-id']);
    assert.deepEqual(forMissing.map((line) => [line.msg, line.res?.statusCode]), [['request', 404]]);

    const probes = lines().filter((line) => line.req && /^\/(healthz|readyz)/.test(line.req.url));
    assert.equal(probes.length, 2);
    assert.ok(probes.every((line) => line.level === 20), 'probes are logged at debug');
  });
});

test('`plaza serve` writes only JSON lines, the first-start hint among them, with LOG_FORMAT=json; a second signal does not cut its stop short', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'plaza-logs-'));
  const testDb = process.env.DATABASE_URL ? await createTestDatabase() : undefined;
  const child = spawn(process.execPath, [join(projectRoot, 'bin/plaza.js'), 'serve'], {
    env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir, PORT: '0', METRICS_PORT: '0', HOST: '127.0.0.1', LOG_FORMAT: 'json', ...(testDb ? { DATABASE_URL: testDb.url! } : {}) },
  });
  let stdout = '';
  let stderr = '';
  let code: number | null = null;
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
  try {
    if (!(await untilOutput(child, child.stdout, () => stdout.includes('"plaza started"')))) assert.fail(`serve exited: ${stderr}`);
  } finally {
    // Twice, as `timeout` or an impatient operator does: the second must not kill the process
    // mid-stop (which left the embedded server running).
    child.kill('SIGTERM');
    await untilOutput(child, child.stdout, () => stdout.includes('"stopping: finishing in-flight work"'));
    child.kill('SIGTERM');
    // The child may have exited already: once(child, 'exit') would then wait for ever.
    ({ code } = await closed(child));
    await testDb?.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  assert.equal(code, 0, stderr);
  const lines = stdout.trim().split('\n').map((line) => JSON.parse(line) as { msg: string; time: string; commands?: string[] });
  assert.equal(lines.at(-1)?.msg, 'stopped');
  assert.ok(lines.every((line) => ISO_TIME.test(line.time)));
  const hint = lines.find((line) => line.msg === 'no user exists yet');
  assert.ok(hint?.commands?.some((command) => command.includes('plaza users add')), JSON.stringify(hint));
  // A DATA_DIR without keys.json and no SECRETS_KEY: the key is generated, and the start says where.
  const generated = lines.find((line) => line.msg.startsWith('SECRETS_KEY is not set')) as { level?: number; msg: string; file?: string } | undefined;
  assert.equal(generated?.level, 40, JSON.stringify(generated));
  assert.equal(generated.file, join(dataDir, 'keys.json'));
  assert.match(generated.msg, new RegExp(`generated a new master key in ${join(dataDir, 'keys.json').replace(/[.]/g, '\\.')}$`));
  assert.equal(stderr, '', 'nothing besides the JSON lines');
});
