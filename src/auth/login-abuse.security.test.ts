import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { seedUser } from '../testing/fixtures.js';
import { loginFrom as login } from '../testing/auth.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';

// Issue 13 items 1, 2 and 6: what an attacker who knows a user name can do to its owner, and what
// a flood of refused logins costs the database. Run on both stores (REDIS_URL set: Redis too).

const stores = [
  { name: 'database', env: {} as Record<string, string>, skip: false as string | false },
  { name: 'redis', env: process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}, skip: process.env.REDIS_URL ? (false as const) : 'REDIS_URL is not set' },
];

// Fresh addresses per run: the Redis counters of earlier runs may still be there.
const run = Math.floor(Math.random() * 200) + 20;
let block = 0;
const addresses = () => {
  const prefix = `10.${run}.${++block}`;
  return (n: number) => `${prefix}.${n}`;
};

for (const store of stores) {
  describe(`login lockout by anyone (${store.name} store)`, { skip: store.skip }, () => {
    let ctx: TestContext;
    before(async () => {
      ctx = await createTestApp(store.env);
    });
    after(() => ctx.close());

    test('failures spread over 40 addresses, repeated every 15 minutes, never keep the right password out', async () => {
      const user = await seedUser(ctx.db);
      const attacker = addresses();
      const owner = addresses();
      for (let round = 0; round < 4; round++) {
        for (let n = 1; n <= 40; n++) assert.notEqual((await login(ctx, user.username, `guess-${round}-${n}`, attacker(n))).statusCode, 200);
        // The owner, from an address of its own, each round from a new device.
        const answer = await login(ctx, user.username, user.password, owner(round));
        assert.equal(answer.statusCode, 200, `round ${round}: ${answer.body}`);
        ctx.clock.advanceSeconds(15 * 60);
      }
    });

    test('after an attack, each success leaves no cooldown: the next device logs in at once', async () => {
      const user = await seedUser(ctx.db);
      const attacker = addresses();
      const devices = addresses();
      for (let n = 1; n <= 30; n++) await login(ctx, user.username, 'wrong', attacker(n));
      for (let device = 1; device <= 5; device++) {
        assert.equal((await login(ctx, user.username, user.password, devices(device))).statusCode, 200, `device ${device}`);
      }
    });

    test('the attacker still cools down on its own addresses', async () => {
      const user = await seedUser(ctx.db);
      const attacker = addresses()(1);
      const answers = [];
      for (let i = 0; i < 10; i++) answers.push((await login(ctx, user.username, 'wrong', attacker)).statusCode);
      assert.deepEqual(answers, [401, 401, 401, 429, 429, 429, 429, 429, 429, 429]);
      assert.equal((await login(ctx, user.username, user.password, attacker)).statusCode, 429);
    });

    test('İ (U+0130) spellings that log in as the user count as that user', async () => {
      const suffix = `${process.pid}${block}`;
      const user = await seedUser(ctx.db, { username: `alice${suffix}` });
      const dotted = `alİce${suffix}`;
      // PostgreSQL's lower() folds İ to i: the lookup takes both spellings for one account …
      assert.equal((await login(ctx, dotted, user.password, addresses()(1))).statusCode, 200);
      // … so the limits must too: 3 failures in any spelling from one address, then 429.
      const ip = addresses()(1);
      for (const name of [dotted, `ALİCE${suffix}`, user.username]) assert.equal((await login(ctx, name, 'wrong', ip)).statusCode, 401);
      assert.equal((await login(ctx, user.username, user.password, ip)).statusCode, 429);
      assert.equal((await login(ctx, dotted, user.password, ip)).statusCode, 429);
    });
  });
}

describe('refused logins are audited per user, address and window, with a count', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp({ LOGIN_REFUSAL_AUDIT_WINDOW_SECONDS: '60' });
  });
  after(() => ctx.close());

  const limitedRows = async (userId: number) =>
    (
      await ctx.db.query<{ detail: { refused: number; retry_after: number; window_seconds: number } }>(
        `SELECT detail FROM auth_events WHERE type = 'login_limited' AND user_id = $1 ORDER BY id`,
        [userId],
      )
    ).rows.map((row) => row.detail);

  test('500 refusals in one window write one row; its count is written when the window ends', async () => {
    const user = await seedUser(ctx.db);
    const ip = addresses()(1);
    for (let i = 0; i < 3; i++) await login(ctx, user.username, 'wrong', ip);
    const before = Number((await ctx.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM auth_events`)).rows[0]!.n);
    for (let i = 0; i < 500; i++) assert.equal((await login(ctx, user.username, 'wrong', ip)).statusCode, 429);
    const afterFlood = Number((await ctx.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM auth_events`)).rows[0]!.n);
    assert.equal(afterFlood - before, 1, 'one audit row for the whole flood');
    // The flood is on record at once …
    assert.deepEqual(await limitedRows(user.id), [{ refused: 1, retry_after: 1, window_seconds: 60 }]);
    // … and the next refusal after the window closes it with its count, and opens the next one.
    ctx.clock.advanceSeconds(0.5);
    for (let i = 0; i < 3; i++) await login(ctx, user.username, 'wrong', ip); // still cooling (1 s from the 3rd failure)
    ctx.clock.advanceSeconds(60);
    for (let i = 0; i < 3; i++) await login(ctx, user.username, 'wrong', ip); // 1 failure (2 s cooldown), 2 refusals
    const rows = await limitedRows(user.id);
    assert.equal(rows.length, 2);
    assert.equal(rows[0]!.refused, 503);
    assert.equal(rows[1]!.refused, 1);
  });

  test('shutdown writes the counts of open windows', async () => {
    const own = await createTestApp();
    try {
      const user = await seedUser(own.db);
      for (let i = 0; i < 3; i++) await login(own, user.username, 'wrong', '192.0.2.44');
      for (let i = 0; i < 25; i++) await login(own, user.username, 'wrong', '192.0.2.44');
      await own.app.close();
      const { rows } = await own.db.query<{ detail: { refused: number } }>(`SELECT detail FROM auth_events WHERE type = 'login_limited' AND user_id = $1`, [user.id]);
      assert.deepEqual(rows.map((row) => row.detail.refused), [25]);
    } finally {
      await own.db.close();
    }
  });
});
