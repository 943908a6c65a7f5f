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
    // Arrays of strings, numbers, dates and nulls, as the completion's record passes them.
    const arrays: [string, unknown[]][] = [
      ['text[]', ['NULL', null, '', ' padded ', 'a,b', '{x}', '"quoted"', 'back\\slash', "it's", '$1', 'ünï ✓']],
      ['double precision[]', [1.5, null, -0.25, 1e21]],
      ['timestamptz[]', [new Date('2026-11-23T10:00:00.123Z'), null]],
      ['jsonb[]', ['{"a":"b\\"c"}', null]],
    ];
    for (const [type, value] of arrays) {
      const sql = `SELECT $1::${type} AS v`;
      const bound = (await db.query<{ v: unknown }>(sql, [value])).rows[0]!.v;
      const inlined = (await db.query<{ v: unknown }>(inlineParameters(sql, [value]))).rows[0]!.v;
      assert.deepEqual(inlined, bound, type);
    }
    // A negative number after an operator stays a number, not the start of a comment.
    assert.equal((await db.query<{ v: number }>(inlineParameters('SELECT 1-$1 AS v', [-1]))).rows[0]!.v, 2);
    assert.equal((await db.query<{ t: string | null }>(`SELECT to_regclass('scratch')::text AS t`)).rows[0]!.t, 'scratch');
  });

  test('what cannot be written safely is refused', () => {
    for (const value of [Number.NaN, Infinity, 'nul\0byte', { a: 1 }, [true], [[1]], ['nul\0'], new Date(Number.NaN), Buffer.from('x')]) {
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

  test('commit outside a transaction is refused', async () => {
    await assert.rejects(db.query('SELECT 1', [], { commit: true }), /only inside a transaction/);
  });

  test('a prelude sent with COMMIT is the whole transaction', async () => {
    const rows = await db.transaction(async (tx, prelude) => {
      await assert.rejects(tx.query('SELECT 1'), /has committed/);
      return prelude;
    }, { prelude: [{ sql: 'INSERT INTO scratch VALUES ($1, $2) RETURNING id', params: [10, 'one trip'] }], commit: true });
    assert.deepEqual(rows, [{ id: 10 }]);
    assert.equal((await db.query('SELECT 1 FROM scratch WHERE id = 10')).rowCount, 1);
    // A failing prelude commits nothing, and the connection goes back usable.
    await assert.rejects(
      db.transaction(async () => {}, { prelude: ['INSERT INTO scratch VALUES (11, NULL)', 'INSERT INTO scratch VALUES (10, NULL)'], commit: true }),
      /duplicate key/,
    );
    assert.equal((await db.query('SELECT 1 FROM scratch WHERE id = 11')).rowCount, 0);
  });

  test('a statement prepared for a simple query is planned once per connection and runs with its values', async () => {
    const sql = 'SELECT $1::int * 2 AS n, $2::text AS note, count(*)::int AS prepared FROM pg_prepared_statements WHERE statement LIKE $3';
    const runs: unknown[] = [];
    // One connection at a time (the pool's idle one), several times: prepared the first time only.
    for (const n of [1, 2, 3]) {
      runs.push(await db.transaction(async (tx, prelude) => prelude, { prelude: [{ sql, params: [n, `it's ${n}`, '%$1::int * 2%'], prepare: true }] }));
    }
    assert.deepEqual(runs, [1, 2, 3].map((n) => [{ n: 2 * n, note: `it's ${n}`, prepared: 1 }]));
    // With COMMIT too, and in a prelude after a failed one on the same connection.
    await assert.rejects(db.transaction(async () => {}, { prelude: [{ sql, params: ['x', '', ''], prepare: true }] }), /invalid input syntax/);
    const last = await db.transaction(async (tx) => (await tx.query<{ n: number }>(sql, [21, '', ''], { commit: true, prepare: true })).rows);
    assert.equal(last[0]!.n, 42);
  });
});
