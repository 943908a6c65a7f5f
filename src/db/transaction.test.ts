import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';

describe('transactions and prepared statements', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
    await db.exec('CREATE TABLE scratch (id int PRIMARY KEY, note text)');
  });
  after(async () => db.close());

  test('the work commits when it resolves and rolls back when it throws; the connection goes back usable', async () => {
    const result = await db.transaction(async (tx) => {
      await tx.query('INSERT INTO scratch VALUES ($1, $2)', [1, 'kept']);
      // Not committed yet: another connection does not see it.
      assert.equal((await db.query('SELECT 1 FROM scratch WHERE id = 1')).rowCount, 0);
      return 'done';
    });
    assert.equal(result, 'done');
    assert.equal((await db.query('SELECT 1 FROM scratch WHERE id = 1')).rowCount, 1);
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query('INSERT INTO scratch VALUES (2, $1)', ['rolled back']);
        await tx.query('INSERT INTO scratch VALUES ($1, $2)', [1, 'duplicate']);
      }),
      /duplicate key/,
    );
    assert.equal((await db.query('SELECT 1 FROM scratch WHERE id = 2')).rowCount, 0);
    await db.transaction((tx) => tx.query('INSERT INTO scratch VALUES (3, $1)', ['after']));
    assert.equal((await db.query('SELECT 1 FROM scratch WHERE id = 3')).rowCount, 1);
  });

  test('a prepared statement is planned once per connection and runs with its values', async () => {
    const sql = 'SELECT $1::int * 2 AS n, $2::text AS note, count(*)::int AS prepared FROM pg_prepared_statements WHERE statement LIKE $3';
    const runs: unknown[] = [];
    for (const n of [1, 2, 3]) {
      runs.push(await db.transaction(async (tx) => (await tx.query(sql, [n, `it's ${n}`, '%$1::int * 2%'], { prepare: true })).rows));
    }
    assert.deepEqual(runs, [1, 2, 3].map((n) => [{ n: 2 * n, note: `it's ${n}`, prepared: 1 }]));
    // After a failed run on the same connection, it still runs.
    await assert.rejects(db.transaction((tx) => tx.query(sql, ['x', '', ''], { prepare: true })), /invalid input syntax/);
    const last = await db.transaction(async (tx) => (await tx.query<{ n: number }>(sql, [21, '', ''], { prepare: true })).rows);
    assert.equal(last[0]!.n, 42);
  });
});
