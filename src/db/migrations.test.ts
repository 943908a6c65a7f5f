import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, test } from 'node:test';
import { createFreshDatabase, type FreshDatabase } from '../../test/support/databases.js';
import { runProcess } from '../cli/cli-test-kit.js';
import { describeStartupError } from '../startup-errors.js';
import { migrate, migrationChecksum, MigrationMismatchError, readMigrations, type Migration } from './migrate.js';

// Every other test starts from the latest schema: this one puts rows in the schema as an earlier
// release left it and checks what a migration makes of them.
let fresh: FreshDatabase | undefined;
const others: FreshDatabase[] = [];
after(async () => {
  await fresh?.drop();
  for (const database of others) await database.drop();
});

async function emptyDatabase() {
  const database = await createFreshDatabase();
  others.push(database);
  return database.db;
}

/** The file as if someone had edited it after it was applied. */
const edited = (migration: Migration): Migration => {
  const sql = `${migration.sql}\n-- edited afterwards\n`;
  return { ...migration, sql, checksum: migrationChecksum(sql) };
};

/** The refusal `migrate` ends with, and the one line a start prints for it. */
async function refusal(run: Promise<unknown>): Promise<string> {
  const error = await run.then(() => assert.fail('migrate should refuse'), (e: unknown) => e);
  assert.ok(error instanceof MigrationMismatchError, String(error));
  const line = describeStartupError(error);
  assert.ok(line && !line.includes('\n'), 'one line');
  return line;
}

test('migration 005 gives existing deliveries the per-seller ordering key, and cancelled ones a status that exists', async () => {
  fresh = await createFreshDatabase();
  const { db } = fresh;
  const migrations = readMigrations();
  await migrate(db, migrations.filter((migration) => migration.version < 5));
  await db.query(`INSERT INTO marketplaces (code, name) VALUES ('MKT', 'Market')`);
  await db.query(`INSERT INTO sellers (id, name) VALUES (1, 'One'), (2, 'Two')`);
  const { rows: [webhook] } = await db.query<{ id: number }>(
    `INSERT INTO webhooks (tenant_kind, tenant_id, marketplace_code, code, name, topic, callback_url, secret_encrypted)
     VALUES ('marketplace', 'MKT', 'MKT', 'orders', 'Orders', 'order/create', 'https://r.example.com/h', 'x') RETURNING id`);
  // Two sellers' orders with the same entity id, keyed as the release before kept them: by entity id alone.
  const deliveries: Record<string, number> = {};
  for (const [name, sellerId, status] of [['one', 1, 'pending'], ['two', 2, 'pending'], ['gone', 2, 'cancelled']] as const) {
    const { rows: [event] } = await db.query<{ id: number }>(
      `INSERT INTO events (event_id, marketplace_code, topic, seller_id, entity_id, body, delivery_count, request_hash, created_at)
       VALUES ($1, 'MKT', 'order/create', $2, 'ORD-1', '{}', 1, 'x', now()) RETURNING id`, [`evt-${name}`, sellerId]);
    const { rows: [delivery] } = await db.query<{ id: number }>(
      `INSERT INTO deliveries (event_id, webhook_id, entity_key, message_id, status, next_attempt_at, created_at, updated_at)
       VALUES ($1, $2, 'ORD-1', $3, $4, now(), now(), now()) RETURNING id`, [event!.id, webhook!.id, `msg_${name}`, status]);
    deliveries[name] = delivery!.id;
  }

  await migrate(db, migrations);
  const { rows } = await db.query<{ id: number; entity_key: string; status: string; completed_at: Date | null }>(
    `SELECT id, entity_key, status, completed_at FROM deliveries ORDER BY id`);
  assert.deepEqual(rows.map((row) => [row.id, row.entity_key, row.status]), [
    [deliveries.one, 'MKT:1:ORD-1', 'pending'],
    [deliveries.two, 'MKT:2:ORD-1', 'pending'],
    [deliveries.gone, 'MKT:2:ORD-1', 'failed'],
  ]);
  assert.ok(rows[2]!.completed_at, 'a cancelled delivery becomes a finished one');
  // And the producer's idempotency key: another seller may now use the same event_id.
  await db.query(`INSERT INTO events (event_id, marketplace_code, topic, seller_id, entity_id, body, delivery_count, request_hash, created_at)
                  VALUES ('evt-one', 'MKT', 'order/create', 2, 'ORD-9', '{}', 1, 'x', now())`);
});

test('an applied migration whose file changed is refused, naming the file, and nothing more is applied', async () => {
  const db = await emptyDatabase();
  const migrations = readMigrations();
  await migrate(db, migrations.slice(0, 3));
  const changed = migrations.map((migration) => (migration.version === 2 ? edited(migration) : migration));
  const line = await refusal(migrate(db, changed));
  assert.match(line, /^migrations\/002_webhooks\.sql has changed since it was applied to this database \(sha256 [0-9a-f]{12}… applied, [0-9a-f]{12}… now\)/);
  const { rows } = await db.query<{ count: number }>(`SELECT count(*)::int AS count FROM schema_migrations`);
  assert.equal(rows[0]!.count, 3, 'the later migrations were not applied');
  // The file as it was applied: accepted again.
  assert.ok((await migrate(db, migrations)).length > 0);
});

test('a number applied under another name is refused: the database never got the file that has it now', async () => {
  const db = await emptyDatabase();
  const migrations = readMigrations();
  await migrate(db, migrations.slice(0, 3));
  // As 012 was: a migration reverted, and its number given to another one.
  const reused = migrations.map((migration) => (migration.version === 3 ? { ...migration, name: '003_something_else' } : migration));
  const line = await refusal(migrate(db, reused));
  assert.match(line, /^migration number 003 was applied to this database as 003_events_and_deliveries\.sql, but migrations\/003_something_else\.sql now has that number/);
});

test('rows recorded before checksums get them from the files as they are, once; then a change is refused', async () => {
  const db = await emptyDatabase();
  const migrations = readMigrations();
  await migrate(db, migrations.slice(0, 2));
  // An installation of the release before: its table has no checksum column.
  await db.exec(`ALTER TABLE schema_migrations DROP COLUMN checksum`);
  // Its 001 was edited after it ran there: at this start it is taken as it is.
  const asItIs = migrations.map((migration) => (migration.version === 1 ? edited(migration) : migration));
  await migrate(db, asItIs);
  const { rows } = await db.query<{ version: number; checksum: string | null }>(`SELECT version, checksum FROM schema_migrations ORDER BY version`);
  assert.equal(rows.length, migrations.length);
  assert.deepEqual(rows.map((row) => row.checksum), asItIs.map((migration) => migration.checksum));
  // Once: from now on the recorded checksum is the reference.
  assert.match(await refusal(migrate(db, migrations)), /^migrations\/001_accounts_and_auth\.sql has changed/);
});

test('plaza migrate and plaza serve refuse a changed migration with exit 2 and one line naming the file', async () => {
  const database = await createFreshDatabase();
  others.push(database);
  await migrate(database.db);
  // What a changed file looks like from the database's side: the recorded checksum is not the file's.
  await database.db.query(`UPDATE schema_migrations SET checksum = repeat('0', 64) WHERE version = 2`);
  const env = { DATABASE_URL: database.url, SECRETS_KEY: randomBytes(32).toString('base64'), HOST: '127.0.0.1', PORT: '0', METRICS_PORT: '0' };
  for (const args of [['migrate'], ['serve']]) {
    const run = await runProcess(env, args, '', 60_000);
    assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
    assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr);
    assert.match(run.stderr, /^plaza: migrations\/002_webhooks\.sql has changed since it was applied to this database/);
  }
});
