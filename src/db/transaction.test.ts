import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import { inlineParameters } from './inline-parameters.js';

describe('statements sent with BEGIN or COMMIT (parameters written into the text)', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
    await db.exec('CREATE TABLE scratch (id int PRIMARY KEY, note text)');
  });
  after(async () => db.close());

  test('a value written into the text reads back as the same value as a parameter', async () => {
    const values = ["it's", 'back\\slash', "\\'; DROP TABLE scratch; --", '$1 and $2', 'ünïcödé ✓', '', -7, 0.25, 2 ** 53 - 1, true, null];
    for (const value of values) {
      const sql = 'SELECT $1::text AS v';
      const bound = (await db.query<{ v: string | null }>(sql, [value])).rows[0]!.v;
      const inlined = (await db.query<{ v: string | null }>(inlineParameters(sql, [value]))).rows[0]!.v;
      assert.equal(inlined, bound, `value ${JSON.stringify(value)}`);
    }
    const numbers = (await db.query<{ v: number[] }>(inlineParameters('SELECT $1::int[] AS v', [[3, -1, 2]]))).rows[0]!.v;
    assert.deepEqual(numbers, [3, -1, 2]);
    // A negative number after an operator stays a number, not the start of a comment.
    assert.equal((await db.query<{ v: number }>(inlineParameters('SELECT 1-$1 AS v', [-1]))).rows[0]!.v, 2);
    assert.equal((await db.query<{ t: string | null }>(`SELECT to_regclass('scratch')::text AS t`)).rows[0]!.t, 'scratch');
  });

  test('what cannot be written safely is refused', () => {
    for (const value of [Number.NaN, Infinity, 'nul\0byte', { a: 1 }, ['text'], new Date(), Buffer.from('x')]) {
      assert.throws(() => inlineParameters('SELECT $1', [value]), TypeError, String(value));
    }
    assert.throws(() => inlineParameters('SELECT $2', [1]), /\$2 has no value/);
    assert.throws(() => inlineParameters('SELECT $0', [1]), /\$0 has no value/);
  });

  test("the prelude's last rows go to the work; a statement sent with COMMIT ends the transaction", async () => {
    const seen = await db.transaction(async (tx, prelude) => {
      await tx.query('INSERT INTO scratch VALUES ($1, $2) RETURNING id', [1, 'kept'], { commit: true }).then(({ rows }) => assert.deepEqual(rows, [{ id: 1 }]));
      // Committed: another connection sees the row while the work is still running.
      assert.equal((await db.query('SELECT 1 FROM scratch WHERE id = 1')).rowCount, 1);
      await assert.rejects(tx.query('SELECT 1'), /has committed/);
      return prelude;
    }, { prelude: ['SELECT pg_advisory_xact_lock(1)', { sql: 'SELECT $1::int + 1 AS n', params: [41] }] });
    assert.deepEqual(seen, [{ n: 42 }]);
  });

  test('a failing statement sent with COMMIT commits nothing', async () => {
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query('INSERT INTO scratch VALUES (2, $1)', ['rolled back']);
        await tx.query('INSERT INTO scratch VALUES ($1, $2)', [1, 'duplicate'], { commit: true });
      }),
      /duplicate key/,
    );
    assert.equal((await db.query('SELECT 1 FROM scratch WHERE id = 2')).rowCount, 0);
    // The connection went back to the pool usable: the next transaction works.
    await db.transaction((tx) => tx.query('INSERT INTO scratch VALUES (3, $1)', ['after'], { commit: true }));
    assert.equal((await db.query('SELECT 1 FROM scratch WHERE id = 3')).rowCount, 1);
  });

  test('commit outside a transaction, or with a prepared statement, is refused', async () => {
    await assert.rejects(db.query('SELECT 1', [], { commit: true }), /only inside a transaction/);
    await assert.rejects(db.transaction((tx) => tx.query('SELECT 1', [], { commit: true, prepare: true })), /cannot be prepared/);
  });
});
