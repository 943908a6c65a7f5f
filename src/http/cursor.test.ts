import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CURSOR_REFUSED, decodeCursor, encodeCursor, keysetPage, timeIdCursor, type PositionField } from './cursor.js';
import { AppError } from './errors.js';

const base64 = (text: string) => Buffer.from(text).toString('base64url');

/** The 400 of the catalogue, naming the cursor. */
function assertRefused(cursor: string, fields: readonly PositionField[]) {
  assert.throws(
    () => decodeCursor(cursor, fields),
    (error: unknown) => {
      assert.ok(error instanceof AppError, String(error));
      assert.equal(error.code, 'validation_failed');
      assert.equal(error.status, 400);
      assert.equal(error.detail, `query.cursor: ${CURSOR_REFUSED}`);
      assert.deepEqual(error.options.errors, [{ field: 'query.cursor', message: CURSOR_REFUSED }]);
      return true;
    },
    `${Buffer.from(cursor, 'base64url').toString()} as ${fields.join(',')}`,
  );
}

describe('the one cursor codec', () => {
  test('a position comes back as it was encoded, for every list\'s shape', () => {
    const cases: [readonly PositionField[], (string | number)[]][] = [
      [['bigint', 'bigint'], [1_772_000_000_123_456, 9_007_199_254_740_991]],
      [['code', 'bigint'], ['erp-orders_2', 5]],
      [['int32'], [2_147_483_647]],
      [['int32'], [0]],
      [['code'], ['MKT']],
    ];
    for (const [fields, position] of cases) {
      const cursor = encodeCursor(position);
      assert.match(cursor, /^[A-Za-z0-9_-]+$/, 'URL-safe without escaping');
      assert.deepEqual(decodeCursor(cursor, fields), position);
    }
  });

  test('the delivery log\'s and the history\'s position keeps the database\'s microseconds', () => {
    const row = { created_micros: '1772000000000001', id: 42 };
    assert.deepEqual(timeIdCursor.decode(timeIdCursor.encode(row)), { createdMicros: 1_772_000_000_000_001, id: 42 });
  });

  test('cursors issued before the one codec are still read', () => {
    assert.deepEqual(timeIdCursor.decode(base64('1772000000000001.42')), { createdMicros: 1_772_000_000_000_001, id: 42 });
    assert.deepEqual(decodeCursor(base64('p:7'), ['int32']), [7]);
    assert.deepEqual(decodeCursor(base64('5'), ['int32']), [5]);
    assert.deepEqual(decodeCursor(base64('"MKT"'), ['code']), ['MKT']);
    assert.deepEqual(decodeCursor(base64('["C",5]'), ['code', 'bigint']), ['C', 5]);
  });

  test('a garbled or forged cursor is the catalogue\'s 400 on query.cursor', () => {
    const refused: [string, readonly PositionField[]][] = [
      ['not-a-cursor', ['bigint', 'bigint']],
      ['', ['int32']],
      [base64('{"a":1}'), ['code', 'bigint']],
      [base64('[1,2,3]'), ['bigint', 'bigint']],
      [base64('[1]'), ['bigint', 'bigint']],
      [base64('[1.5,2]'), ['bigint', 'bigint']],
      [base64('["1",2]'), ['bigint', 'bigint']],
      [base64('[-1,2]'), ['bigint', 'bigint']],
      [base64('[9007199254740992,2]'), ['bigint', 'bigint']],
      [base64('[2147483648]'), ['int32']],
      [base64('[null]'), ['int32']],
      [base64('["\\u0000",1]'), ['code', 'bigint']],
      [base64('["a b"]'), ['code']],
      [base64('[1]'), ['code']],
      [base64('p:-1'), ['int32']],
      [base64('p:2147483648'), ['int32']],
      [base64('12345678901234567.1'), ['bigint', 'bigint']],
    ];
    for (const [cursor, fields] of refused) assertRefused(cursor, fields);
  });

  test('a page of limit rows out of limit + 1 read has a cursor after its last row; the last page none', () => {
    const rows = [{ id: 3 }, { id: 2 }, { id: 1 }];
    const cursorOf = (row: { id: number }) => encodeCursor([row.id]);
    assert.deepEqual(keysetPage(rows, 2, cursorOf), { rows: [{ id: 3 }, { id: 2 }], next: encodeCursor([2]) });
    assert.deepEqual(keysetPage(rows, 3, cursorOf), { rows, next: null });
    assert.deepEqual(keysetPage([], 3, cursorOf), { rows: [], next: null });
  });
});
