import assert from 'node:assert/strict';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { buildApp, type App } from '../app.js';
import { ManualClock } from '../clock.js';
import { loadConfig } from '../config.js';
import { openPostgres } from '../db/postgres.js';
import type { Database } from '../db/database.js';
import { generateKeys } from '../keys.js';
import { seedUser, type SeededUser } from '../testing/fixtures.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';

/** A TCP proxy in front of PostgreSQL that the test can cut and restore, like a database restart. */
class CuttableProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;
  constructor(private readonly target: { host: string; port: number } | { path: string }) {}

  async start(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = 'path' in this.target ? connect(this.target.path) : connect(this.target.port, this.target.host);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  async cut(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}

describe('database down: 503 with Retry-After, recovery without restart', () => {
  let data: TestDatabase;
  let proxy: CuttableProxy;
  let db: Database;
  let app: App;
  let user: SeededUser;

  before(async () => {
    data = await createTestDatabase();
    const target = new URL(data.url);
    // The embedded server of `npm test` listens on a Unix socket (?host=<directory>).
    const socketDir = target.searchParams.get('host');
    const port = Number(target.port || 5432);
    proxy = new CuttableProxy(socketDir ? { path: `${socketDir}/.s.PGSQL.${port}` } : { host: target.hostname, port });
    await proxy.start();
    const viaProxy = new URL(data.url);
    viaProxy.searchParams.delete('host');
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    const config = loadConfig({ LOG_LEVEL: 'silent', DATABASE_RETRY_AFTER_SECONDS: '7' });
    db = openPostgres({ connectionString: viaProxy.toString(), poolSize: 2, connectTimeoutMs: 1000, statementTimeoutMs: 5000, onError: () => {} });
    app = await buildApp({ config, db, keys: await generateKeys(), clock: new ManualClock(new Date()), logger: false });
    user = await seedUser(data);
  });
  after(async () => {
    await app?.close();
    await db?.close();
    await proxy?.cut();
    await data?.close();
  });

  const login = () => app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username: user.username, password: user.password } });

  test('login and refresh answer 503 while the database is away, 200 once it is back', async () => {
    const before = await login();
    assert.equal(before.statusCode, 200);
    const refreshToken = before.json().refresh_token as string;

    await proxy.cut();
    for (const response of [await login(), await app.inject({ method: 'POST', url: '/api/v2/auth/refresh', payload: { refresh_token: refreshToken } })]) {
      assert.equal(response.statusCode, 503);
      assert.equal(response.headers['retry-after'], '7');
      const body = response.json();
      assert.equal(body.code, 'service_unavailable');
      assert.ok(!/ECONNREFUSED|127\.0\.0\.1|postgres/i.test(response.body), response.body);
    }

    await proxy.start();
    assert.equal((await login()).statusCode, 200);
    assert.equal((await app.inject({ method: 'POST', url: '/api/v2/auth/refresh', payload: { refresh_token: refreshToken } })).statusCode, 200);
  });
});

describe('a statement that waits past DATABASE_STATEMENT_TIMEOUT_MS (a migration holding a lock)', () => {
  let data: TestDatabase;
  let db: Database;
  let app: App;
  let user: SeededUser;
  before(async () => {
    data = await createTestDatabase();
    const config = loadConfig({ LOG_LEVEL: 'silent', DATABASE_RETRY_AFTER_SECONDS: '7' });
    db = openPostgres({ connectionString: data.url, poolSize: 2, connectTimeoutMs: 1000, statementTimeoutMs: 300, onError: () => {} });
    app = await buildApp({ config, db, keys: await generateKeys(), clock: new ManualClock(new Date()), logger: false });
    user = await seedUser(data);
  });
  after(async () => {
    await app?.close();
    await db?.close();
    await data?.close();
  });

  test('answers 503 with Retry-After, not 500, and 200 once the lock is gone', async () => {
    const login = () => app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username: user.username, password: user.password } });
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    const holding = data.transaction(async (tx) => {
      await tx.query('LOCK TABLE users IN ACCESS EXCLUSIVE MODE');
      await released;
    });
    try {
      const response = await login();
      assert.equal(response.statusCode, 503, response.body);
      assert.equal(response.headers['retry-after'], '7');
      assert.equal(response.json().code, 'service_unavailable');
    } finally {
      release();
      await holding;
    }
    assert.equal((await login()).statusCode, 200);
  });
});
