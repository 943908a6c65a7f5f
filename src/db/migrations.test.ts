import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, test } from 'node:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createFreshDatabase, type FreshDatabase } from '../testing/fresh-database.js';
import { runPlaza } from '../testing/plaza-process.js';
import { projectRoot } from '../paths.js';
import { describeStartupError } from '../startup-errors.js';
import { ADOPT_BASELINE_FILE, migrate, migrationChecksum, MigrationMismatchError, readMigrations, type Migration } from './migrate.js';
import { describeSchema, schemaDiff } from './schema-snapshot.js';

const others: FreshDatabase[] = [];
after(async () => {
  for (const database of others) await database.drop();
});

async function emptyDatabase() {
  const database = await createFreshDatabase();
  others.push(database);
  return database.db;
}

/**
 * A migration after the baseline, so that these tests have one to apply or not: the runner's rules
 * are tested on the baseline and this one alone, whatever real migrations follow the baseline.
 */
const later: Migration = (() => {
  const sql = 'CREATE TABLE later_marker (id integer)';
  return { version: 999, name: '999_later', sql, checksum: migrationChecksum(sql) };
})();
const withLater = () => [readMigrations()[0]!, later];

/** The migrations that the baseline replaced, kept as they were for the tests of a database that applied them. */
const preBaselineMigrations = () => readMigrations(join(projectRoot, 'test/fixtures/pre-baseline-migrations'));
const adoptBaseline = () => readFileSync(join(projectRoot, ADOPT_BASELINE_FILE), 'utf8');

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

test('an applied migration whose file changed is refused, naming the file, and nothing more is applied', async () => {
  const db = await emptyDatabase();
  const migrations = withLater();
  await migrate(db, migrations.slice(0, 1));
  const changed = migrations.map((migration) => (migration.version === 1 ? edited(migration) : migration));
  const line = await refusal(migrate(db, changed));
  assert.match(line, /^migrations\/001_baseline\.sql has changed since it was applied to this database \(sha256 [0-9a-f]{12}… applied, [0-9a-f]{12}… now\)/);
  const { rows } = await db.query<{ count: number }>(`SELECT count(*)::int AS count FROM schema_migrations`);
  assert.equal(rows[0]!.count, 1, 'the later migration was not applied');
  // The file as it was applied: accepted again.
  assert.deepEqual(await migrate(db, migrations), migrations.slice(1).map((migration) => migration.name));
});

test('a number applied under another name is refused: the database never got the file that has it now', async () => {
  const db = await emptyDatabase();
  const migrations = withLater();
  await migrate(db, migrations);
  // As 012 was: a migration reverted, and its number given to another one.
  const reused = migrations.map((migration) => (migration.version === 999 ? { ...migration, name: '999_something_else' } : migration));
  const line = await refusal(migrate(db, reused));
  assert.match(line, /^migration number 999 was applied to this database as 999_later\.sql, but migrations\/999_something_else\.sql now has that number/);
});

test('rows recorded before checksums get them from the files as they are, once; then a change is refused', async () => {
  const db = await emptyDatabase();
  const migrations = withLater();
  await migrate(db, migrations);
  // An installation of the release before: its table has no checksum column.
  await db.exec(`ALTER TABLE schema_migrations DROP COLUMN checksum`);
  // Its 001 was edited after it ran there: at this start it is taken as it is.
  const asItIs = migrations.map((migration) => (migration.version === 1 ? edited(migration) : migration));
  await migrate(db, asItIs);
  const { rows } = await db.query<{ version: number; checksum: string | null }>(`SELECT version, checksum FROM schema_migrations ORDER BY version`);
  assert.equal(rows.length, migrations.length);
  assert.deepEqual(rows.map((row) => row.checksum), asItIs.map((migration) => migration.checksum));
  // Once: from now on the recorded checksum is the reference.
  assert.match(await refusal(migrate(db, migrations)), /^migrations\/001_baseline\.sql has changed/);
});

test('plaza migrate and plaza serve refuse a changed migration with exit 2 and one line naming the file', async () => {
  const database = await createFreshDatabase();
  others.push(database);
  await migrate(database.db);
  // What a changed file looks like from the database's side: the recorded checksum is not the file's.
  await database.db.query(`UPDATE schema_migrations SET checksum = repeat('0', 64) WHERE version = 1`);
  const env = { DATABASE_URL: database.url, SECRETS_KEY: randomBytes(32).toString('base64'), HOST: '127.0.0.1', PORT: '0', METRICS_PORT: '0' };
  for (const args of [['migrate'], ['serve']]) {
    const run = await runPlaza(env, args, '', 60_000);
    assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
    assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr);
    assert.match(run.stderr, /^plaza: migrations\/001_baseline\.sql has changed since it was applied to this database/);
  }
});

test('a database migrated with the files the baseline replaced is refused with how to proceed; the one-off step adopts the baseline', async () => {
  const database = await createFreshDatabase();
  others.push(database);
  const { db } = database;
  await migrate(db, preBaselineMigrations());
  const line = await refusal(migrate(db));
  assert.match(line, /^this database was migrated with the migrations from before migrations\/001_baseline\.sql \(the last it applied: 025_delivery_streams\.sql\), which the baseline replaced: recreate a development database, or run migrations\/adopt-baseline\.sql once/);
  // A start says the same and exits 2.
  const env = { DATABASE_URL: database.url, SECRETS_KEY: randomBytes(32).toString('base64'), HOST: '127.0.0.1', PORT: '0', METRICS_PORT: '0' };
  const run = await runPlaza(env, ['migrate'], '', 60_000);
  assert.equal(run.code, 2, run.stderr);
  assert.match(run.stderr, /^plaza: this database was migrated with the migrations from before migrations\/001_baseline\.sql/);

  // The one-off step: the old files made exactly the baseline's schema, and the baseline is recorded in their place.
  await db.exec(adoptBaseline());
  // The baseline counts as applied: only the migrations after it run, and the schema is then the current one.
  const after = readMigrations().slice(1);
  assert.deepEqual(await migrate(db), after.map((migration) => migration.name));
  assert.equal(schemaDiff(readFileSync(join(projectRoot, 'migrations/schema.sql'), 'utf8'), await describeSchema(db)), undefined);
  const { rows } = await db.query<{ name: string; checksum: string }>(`SELECT name, checksum FROM schema_migrations ORDER BY version`);
  assert.deepEqual(rows, [{ name: '001_baseline', checksum: readMigrations()[0]!.checksum }, ...after.map((migration) => ({ name: migration.name, checksum: migration.checksum }))]);
  // Run twice by mistake: refused, nothing changed.
  await assert.rejects(db.exec(adoptBaseline()), /already recorded/);
});

test('the one-off step refuses a database that did not apply every file the baseline replaced', async () => {
  const db = await emptyDatabase();
  await migrate(db, preBaselineMigrations().filter((migration) => migration.version < 25));
  await assert.rejects(db.exec(adoptBaseline()), /did not apply the old migrations up to 025_delivery_streams/);
  const { rows } = await db.query<{ count: number }>(`SELECT count(*)::int AS count FROM schema_migrations WHERE name = '001_baseline'`);
  assert.equal(rows[0]!.count, 0);
  await refusal(migrate(db));
});
