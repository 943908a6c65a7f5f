import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { openPostgres } from './postgres.js';
import type { Database } from './database.js';
import { createTestDatabase, withAdminClient, type TestDatabase } from '../testing/test-database.js';

/**
 * A timestamp printed as text reads back as the same instant only in the ISO style (a numeric
 * offset): the delivery claim hands its time to the worker as text (queue/lock-due-webhooks.ts), and
 * the driver parses every timestamp it reads from text. A server or database whose DateStyle is
 * another prints zone abbreviations: with TimeZone Asia/Kolkata, "IST", which reads back as
 * Israel's time (3.5 hours off). Each connection therefore asks for ISO (db/postgres.ts).
 */
describe('timestamps on a database whose DateStyle is not ISO', () => {
  let testDb: TestDatabase;
  let db: Database;
  const instant = '2026-11-27 20:00:00.123456+00';
  before(async () => {
    testDb = await createTestDatabase();
    const name = new URL(testDb.url).pathname.slice(1);
    await withAdminClient(testDb.url, (admin) => admin.query(`ALTER DATABASE ${name} SET DateStyle = 'Postgres, DMY'; ALTER DATABASE ${name} SET TimeZone = 'Asia/Kolkata'`));
    db = openPostgres({ connectionString: testDb.url, poolSize: 2, connectTimeoutMs: 3000, statementTimeoutMs: 30_000 });
  });
  after(async () => {
    await db.close();
    await testDb.close();
  });

  test('a timestamp printed as text on one connection is the same instant read on another, and the driver parses it right', async () => {
    const printed = await db.transaction((tx) => tx.query<{ text: string; at: Date }>(`SELECT $1::timestamptz::text AS text, $1::timestamptz AS at`, [instant]));
    const { text, at } = printed.rows[0]!;
    const { rows } = await db.query<{ same: boolean }>(`SELECT $1::timestamptz = $2::timestamptz AS same`, [text, instant]);
    assert.equal(rows[0]!.same, true, `${text} read back as another instant than ${instant}`);
    assert.equal(at.toISOString(), '2026-11-27T20:00:00.123Z');
  });
});
