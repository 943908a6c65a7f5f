import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { buildApp } from '../app.js';
import type { Database } from '../db/database.js';
import { openPostgres } from '../db/postgres.js';
import { postEvent, sampleEvent, seedWorld, type World } from '../testing/events.js';
import { seedUser, type SeededUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { createTestDatabase, withAdminClient, withDatabase } from '../testing/test-database.js';
import { runPlaza } from '../testing/plaza-process.js';
import { decryptSecret } from '../keys/secret-box.js';
import { writeBackup } from './backup.js';
import { listTables } from './catalog.js';
import { BackupFileError } from './format.js';
import { restoreBackup, RestoreFailedError, RestoreRefusedError } from './restore.js';

const dir = mkdtempSync(join(tmpdir(), 'plaza-backup-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** An empty database nobody is connected to (restore refuses databases with other sessions). */
async function emptyDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const server = process.env.DATABASE_URL!;
  const name = `plaza_restore_${process.pid}_${randomBytes(4).toString('hex')}`;
  await withAdminClient(server, (admin) => admin.query(`CREATE DATABASE ${name}`));
  return { url: withDatabase(server, name), drop: () => withAdminClient(server, (admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => {}) };
}

/** A short-lived pool, closed before the next restore. */
async function withPool<T>(url: string, work: (db: Database) => Promise<T>): Promise<T> {
  const db = openPostgres({ connectionString: url, poolSize: 2, connectTimeoutMs: 3000, statementTimeoutMs: 30_000 });
  try {
    return await work(db);
  } finally {
    await db.close();
  }
}

async function rowCounts(db: Database): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of await listTables(db)) counts[table.name] = (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table.name}"`)).rows[0]!.n;
  return counts;
}

/** A digest of every row of every table: equal digests mean the same contents, value for value. */
async function contents(db: Database): Promise<Record<string, string>> {
  const digests: Record<string, string> = {};
  for (const table of await listTables(db)) {
    digests[table.name] = (await db.query<{ md5: string | null }>(`SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS md5 FROM "${table.name}" t`)).rows[0]!.md5 ?? 'empty';
  }
  return digests;
}

describe('plaza backup and restore', () => {
  let source: TestContext;
  let world: World;
  let user: SeededUser;
  let secret: string;
  let sourceCounts: Record<string, number>;
  const file = join(dir, 'plaza.backup.gz');

  before(async () => {
    source = await createTestApp();
    world = await seedWorld(source);
    user = await seedUser(source.db, { username: 'restored-user', password: 'a long enough password 1' });
    // A webhook created through the API: its secret is stored encrypted with the keys' SECRETS_KEY.
    const created = await source.app.inject({
      method: 'POST', url: '/v1/MKT/webhooks', headers: world.headers.admin,
      payload: { code: 'orders', name: 'Orders', topic: 'order/create', callback_url: 'https://receiver.example.com/hook' },
    });
    assert.equal(created.statusCode, 201, created.body);
    secret = (created.json() as { secret: string }).secret;
    for (let i = 0; i < 5; i++) assert.equal((await postEvent(source, world.headers.admin, sampleEvent('order/create', world, { event_id: `order-${i}` }))).statusCode, 202);
    const login = await source.app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username: user.username, password: user.password } });
    assert.equal(login.statusCode, 200, login.body);
    // Enough data (~6 MB of events) that COPY streams fill and drain their buffers many times, with
    // the characters COPY's text format escapes (tab, newline, backslash) and non-ASCII text.
    await source.db.query(
      `INSERT INTO events (event_id, marketplace_code, topic, seller_id, entity_id, body, delivery_count, request_hash, created_at)
       SELECT 'bulk-' || i, marketplace_code, topic, seller_id, entity_id || E'\\t\\n\\\\ ñ ' || i,
              json_build_object('note', repeat('x', 2000), 'tricky', E'tab\\tnewline\\nbackslash\\\\ €'), 0, request_hash, created_at
         FROM (SELECT * FROM events LIMIT 1) e, generate_series(1, 3000) i`,
    );
    sourceCounts = await rowCounts(source.db);
    assert.ok(sourceCounts.deliveries! >= 5 && sourceCounts.events! >= 5 && sourceCounts.refresh_tokens! >= 1, JSON.stringify(sourceCounts));
  });
  after(() => source.close());

  test('backup writes one 0600 file (no draft left), with a manifest of every table and the migrations', async () => {
    const manifest = await writeBackup(source.db.url, file);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(readdirSync(dir), ['plaza.backup.gz']);
    assert.deepEqual(Object.fromEntries(manifest.tables.map((t) => [t.name, t.rows])), sourceCounts);
    const applied = (await source.db.query<{ name: string }>(`SELECT name FROM schema_migrations ORDER BY version`)).rows.map((r) => r.name);
    assert.deepEqual(manifest.migrations.map((m) => m.name), applied);
    // Referenced tables come before the tables that reference them.
    const order = manifest.tables.map((t) => t.name);
    assert.ok(order.indexOf('users') < order.indexOf('refresh_tokens') && order.indexOf('events') < order.indexOf('deliveries'), order.join(','));
    const firstLine = gunzipSync(readFileSync(file)).toString().split('\n')[0]!;
    assert.equal(JSON.parse(firstLine).format, 'plaza-backup');
  });

  test('restore into another database: same rows, users log in, secrets decrypt, sequences continue', async () => {
    const target = await emptyDatabase();
    try {
      const result = await restoreBackup(target.url, file);
      assert.deepEqual(result.upgradedWith, []);
      const restored = openPostgres({ connectionString: target.url, poolSize: 4, connectTimeoutMs: 3000, statementTimeoutMs: 30_000 });
      const app = await buildApp({ config: source.config, db: restored, keys: source.keys, clock: source.clock, logger: false });
      try {
        assert.deepEqual(await rowCounts(restored), sourceCounts);
        assert.deepEqual(await contents(restored), await contents(source.db));
        const login = await app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username: user.username, password: user.password } });
        assert.equal(login.statusCode, 200, login.body);
        const { rows } = await restored.query<{ secret_encrypted: string }>(`SELECT secret_encrypted FROM webhooks WHERE code = 'orders'`);
        assert.equal(decryptSecret(source.keys.webhookSecretsKey, rows[0]!.secret_encrypted), secret);
        // New rows get ids after the restored ones instead of colliding with them.
        const before = (await restored.query<{ max: number }>(`SELECT max(id)::int AS max FROM users`)).rows[0]!.max;
        const added = await seedUser(restored, { username: 'after-restore' });
        assert.ok(added.id > before, `${added.id} > ${before}`);
        const maxDelivery = (await restored.query<{ max: number }>(`SELECT max(id)::int AS max FROM deliveries`)).rows[0]!.max;
        const posted = await app.inject({ method: 'POST', url: '/v1/MKT/events', headers: world.headers.admin, payload: sampleEvent('order/create', world, { event_id: 'after-restore' }) });
        assert.equal(posted.statusCode, 202, posted.body);
        const newDeliveries = await restored.query<{ id: number }>(`SELECT d.id FROM deliveries d JOIN events e ON e.id = d.event_id WHERE e.event_id = 'after-restore'`);
        assert.ok(newDeliveries.rowCount > 0 && newDeliveries.rows.every((row) => row.id > maxDelivery));
      } finally {
        await app.close();
        await restored.close();
      }

      // Restoring over a database with data replaces it: the user added after the backup is gone.
      await restoreBackup(target.url, file);
      await withPool(target.url, async (db) => {
        assert.deepEqual(await rowCounts(db), sourceCounts);
        assert.equal((await db.query(`SELECT 1 FROM users WHERE username = 'after-restore'`)).rowCount, 0);
      });
    } finally {
      await target.drop();
    }
  });

  test('restore refuses while another session uses the database, naming it, and changes nothing', async () => {
    const target = await emptyDatabase();
    try {
      await restoreBackup(target.url, file);
      await withPool(target.url, async (db) => {
        await db.exec(`DELETE FROM deliveries`);
        await assert.rejects(restoreBackup(target.url, file), (error: Error) => error instanceof RestoreRefusedError && /1 other session\(s\).*backend \d+/.test(error.message));
        assert.equal((await db.query(`SELECT 1 FROM deliveries`)).rowCount, 0);
      });
    } finally {
      await target.drop();
    }
  });

  test('a truncated, corrupted, miscounted or newer-schema file is refused and the database stays as it was', async () => {
    const target = await emptyDatabase();
    try {
      await restoreBackup(target.url, file);
      await withPool(target.url, (db) => db.exec(`DELETE FROM deliveries`));
      const original = readFileSync(file);
      const variant = (name: string, bytes: Buffer) => {
        const path = join(dir, name);
        writeFileSync(path, bytes);
        return path;
      };
      const truncated = variant('truncated.gz', original);
      truncateSync(truncated, Math.floor(original.length * 0.8));
      const corrupted = Buffer.from(original);
      corrupted[Math.floor(corrupted.length / 2)]! ^= 0xff;
      const text = gunzipSync(original).toString();
      const lines = text.split('\n');
      const manifest = JSON.parse(lines[0]!);
      // One delivery row fewer than the manifest counts.
      const miscounted = [...lines];
      // Line 0 is the manifest; each table before deliveries takes its rows plus the `\.` line.
      const firstDeliveryLine = manifest.tables.slice(0, manifest.tables.findIndex((t: { name: string }) => t.name === 'deliveries')).reduce((n: number, t: { rows: number }) => n + t.rows + 1, 1);
      miscounted.splice(firstDeliveryLine, 1);
      // Intact and counted right, but a value the schema refuses: the load itself fails and rolls back.
      const badValue = [...lines];
      badValue[firstDeliveryLine] = badValue[firstDeliveryLine]!.replace(/^\d+/, 'not-a-number');
      const newer = [JSON.stringify({ ...manifest, migrations: [...manifest.migrations, { version: 999, name: '999_from_the_future', appliedAt: manifest.createdAt }] }), ...lines.slice(1)];
      const cases: Array<[string, RegExp, new (...args: never[]) => Error]> = [
        [truncated, /not intact gzip data|ends inside table/, BackupFileError],
        [variant('corrupted.gz', corrupted), /not intact gzip data/, BackupFileError],
        [variant('miscounted.gz', gzipSync(miscounted.join('\n'))), /table deliveries has \d+ rows where the manifest says \d+/, BackupFileError],
        [variant('bad-value.gz', gzipSync(badValue.join('\n'))), /rolled back: invalid input syntax for type bigint.*COPY deliveries/, RestoreFailedError],
        [variant('newer.gz', gzipSync(newer.join('\n'))), /999_from_the_future/, RestoreRefusedError],
        [variant('not-a-backup.gz', gzipSync('{"hello":1}\n')), /manifest/, BackupFileError],
        [variant('plain.txt', Buffer.from('hello\n')), /not intact gzip data/, BackupFileError],
      ];
      for (const [path, message, type] of cases) {
        await assert.rejects(restoreBackup(target.url, path), (error: Error) => error instanceof type && message.test(error.message), path);
      }
      await withPool(target.url, async (db) => {
        const counts = await rowCounts(db);
        assert.deepEqual(counts, { ...sourceCounts, deliveries: 0 }, 'the database is exactly as before the attempts');
      });
    } finally {
      await target.drop();
    }
  });

  test('the CLI: --help needs no database; backup and restore over DATABASE_URL; a bad file exits 2', async () => {
    const cli = runPlaza;
    const help = await cli({ DATA_DIR: join(dir, 'never-created') }, ['backup', '--help']);
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /plaza backup <file>/);
    assert.deepEqual(readdirSync(dir).includes('never-created'), false);

    const nowhere = await cli({ DATABASE_URL: source.db.url }, ['backup', join(dir, 'missing-dir', 'x.gz')]);
    assert.equal(nowhere.code, 2);
    assert.match(nowhere.stderr, /Cannot write .*missing-dir/);

    const cliFile = join(dir, 'cli.backup.gz');
    const backup = await cli({ DATABASE_URL: source.db.url }, ['backup', cliFile]);
    assert.equal(backup.code, 0, backup.stderr);
    assert.match(backup.stdout, /Wrote .*cli\.backup\.gz: \d+ tables, \d+ rows/);
    assert.equal(statSync(cliFile).mode & 0o777, 0o600);

    const onDirectory = await cli({ DATABASE_URL: source.db.url }, ['backup', dir]);
    assert.equal(onDirectory.code, 2, onDirectory.stderr);
    assert.match(onDirectory.stderr, /Cannot write /);

    const target = await emptyDatabase();
    try {
      const nothing = await cli({ DATABASE_URL: target.url }, ['backup', join(dir, 'empty.gz')]);
      assert.equal(nothing.code, 2, nothing.stderr);
      assert.match(nothing.stderr, /has no Plaza schema yet .* nothing to back up/);
      const restored = await cli({ DATABASE_URL: target.url }, ['restore', cliFile]);
      assert.equal(restored.code, 0, restored.stderr);
      await withPool(target.url, async (db) => assert.deepEqual(await rowCounts(db), sourceCounts));
      const bad = join(dir, 'bad.gz');
      writeFileSync(bad, readFileSync(cliFile).subarray(0, 100));
      const refused = await cli({ DATABASE_URL: target.url }, ['restore', bad]);
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, /is not a usable Plaza backup: .*Nothing was changed/);
      const usage = await cli({ DATABASE_URL: target.url }, ['restore']);
      assert.equal(usage.code, 2);
    } finally {
      await target.drop();
    }
  });
});

/**
 * COPY's text format prints timestamps in the session's DateStyle. In a style other than ISO a zone
 * is an abbreviation, which does not always read back as the same instant (Asia/Kolkata's "IST" is
 * read as Israel's time): backup and restore ask for ISO whatever the server's settings.
 */
describe('backup and restore on databases whose DateStyle is not ISO', () => {
  test('a timestamp comes back as the same instant', async () => {
    const source = await createTestDatabase();
    const target = await emptyDatabase();
    const file = join(dir, 'date-style.backup.gz');
    const otherStyle = (url: string) => {
      const name = new URL(url).pathname.slice(1);
      return withAdminClient(url, (admin) => admin.query(`ALTER DATABASE ${name} SET DateStyle = 'Postgres, DMY'; ALTER DATABASE ${name} SET TimeZone = 'Asia/Kolkata'`));
    };
    try {
      await otherStyle(source.url);
      await otherStyle(target.url);
      await withPool(source.url, (db) => db.query(`INSERT INTO marketplaces (code, name, created_at) VALUES ('TZ', 'Time zones', '2026-11-27 20:00:00.123456+00')`));
      await writeBackup(source.url, file);
      await restoreBackup(target.url, file);
      const restored = await withPool(target.url, (db) => db.query<{ epoch: string }>(`SELECT extract(epoch FROM created_at)::text AS epoch FROM marketplaces WHERE code = 'TZ'`));
      assert.equal(restored.rows[0]?.epoch, '1795809600.123456');
    } finally {
      await target.drop();
      await source.close();
    }
  });
});
