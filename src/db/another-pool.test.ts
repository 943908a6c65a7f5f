import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../config.js';
import { openDatabase, type OpenedDatabase } from './open.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';

/**
 * `plaza serve` with both roles gives its delivery worker a pool of its own (src/server.ts): the
 * claims every delivery waits for must not queue behind the API's requests for a connection
 * (bench/results/history.md, "Scenario 5: where the milliseconds go").
 */
describe('another pool on the same database', () => {
  let testDb: TestDatabase;
  let db: OpenedDatabase;
  before(async () => {
    testDb = await createTestDatabase();
    db = await openDatabase(loadConfig({ DATABASE_URL: testDb.url, DATABASE_POOL_SIZE: '1', MAINTENANCE_INTERVAL_SECONDS: '0' }));
  });
  after(async () => {
    await db.close();
    await testDb.close();
  });

  test('answers while every connection of the first pool is taken, and listens through its LISTEN connection', async () => {
    const other = db.anotherPool(1);
    let release = () => {};
    const held = db.transaction(async (tx) => {
      await tx.query('SELECT 1');
      await new Promise<void>((resolve) => (release = resolve));
    });
    try {
      const answered = await Promise.race([
        other.query<{ n: number }>('SELECT 41 + 1 AS n').then(({ rows }) => rows[0]!.n),
        new Promise((resolve) => setTimeout(() => resolve('waited for the first pool'), 3000)),
      ]);
      assert.equal(answered, 42);
      const payloads: string[] = [];
      const unlisten = await other.listen('another_pool_test', (payload) => payloads.push(payload));
      await other.query(`SELECT pg_notify('another_pool_test', 'hello')`);
      const deadline = Date.now() + 3000;
      while (payloads.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.deepEqual(payloads, ['hello']);
      await unlisten();
    } finally {
      release();
      await held;
      await other.close();
    }
  });
});
