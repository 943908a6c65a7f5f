import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createFreshDatabase, type FreshDatabase } from '../testing/fresh-database.js';
import { migrate, migrationsDir } from './migrate.js';
import { describeSchema, snapshotDrift } from './schema-snapshot.js';

// The drift check (as pg-boss does): the migrations, run on an empty database, must produce exactly
// the committed snapshot, so that a change of schema is seen in review as a change of that file.
let fresh: FreshDatabase;
before(async () => {
  fresh = await createFreshDatabase();
  await migrate(fresh.db);
});
after(() => fresh?.drop());

const snapshot = () => readFileSync(join(migrationsDir, 'schema.sql'), 'utf8');

test('the migrations produce exactly migrations/schema.sql', async () => {
  const drift = snapshotDrift(snapshot(), await describeSchema(fresh.db));
  if (drift) assert.fail(drift);
});

test('an index added by hand is a drift, reported with its line and the command that regenerates the snapshot', async () => {
  await fresh.db.exec(`CREATE INDEX webhooks_added_by_hand ON webhooks (name)`);
  try {
    const drift = snapshotDrift(snapshot(), await describeSchema(fresh.db));
    assert.ok(drift, 'the extra index is seen');
    assert.match(drift, /^\+ CREATE INDEX webhooks_added_by_hand ON public\.webhooks USING btree \(name\);$/m);
    assert.match(drift, /run `npm run schema:snapshot`/);
    // Only that line differs (and its blank separator): the diff is readable.
    assert.equal(drift.split('\n').filter((line) => /^[+-] /.test(line)).length, 2, drift);
  } finally {
    await fresh.db.exec(`DROP INDEX webhooks_added_by_hand`);
  }
});
