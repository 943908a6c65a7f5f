import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { insertUser } from './accounts.repository.js';
import { checkNewUserName } from './user-name.js';
import { loginOk, postLogin } from '../testing/auth.js';
import { hashPassword } from '../auth/passwords.js';
import { runInProcess } from '../testing/cli.js';
import { accessTokenFor, bearer, OTHER_STRONG_PASSWORD, seedUser, STRONG_PASSWORD } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';

/**
 * Issue 28, item 10: `"alice "` and a Cyrillic `"аlice"` were accepted next to `alice`. Names are
 * taken in canonical form (NFKC, trimmed) everywhere, and a new name may not mix scripts.
 */
describe('user names that look alike', () => {
  let ctx: TestContext;
  let admin: { authorization: string };
  before(async () => {
    ctx = await createTestApp();
    admin = bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { role: 'admin' })));
  });
  after(() => ctx.close());

  const create = (username: string) =>
    ctx.app.inject({ method: 'POST', url: '/api/v2/admin/users', headers: admin, payload: { username, password: STRONG_PASSWORD, seller_id: 1 } });
  const rename = (id: number, username: string) =>
    ctx.app.inject({ method: 'PATCH', url: `/api/v2/admin/users/${id}`, headers: admin, payload: { username } });
  const refusedName = (response: { statusCode: number; json(): { code: string; errors?: { field: string; message: string }[] } }, message: RegExp) => {
    assert.equal(response.statusCode, 400);
    assert.equal(response.json().code, 'validation_failed');
    assert.equal(response.json().errors?.[0]?.field, 'body.username');
    assert.match(response.json().errors![0]!.message, message);
  };

  test('a trailing space and NFKC forms name the same user: creating them next to it is 409, logging in with them finds it', async () => {
    const created = await create('alice');
    assert.equal(created.statusCode, 201, created.body);
    for (const lookalike of ['alice ', ' alice', 'ａｌｉｃｅ', 'ALICE', '\u3000alice']) {
      const response = await create(lookalike);
      assert.equal(response.statusCode, 409, `${JSON.stringify(lookalike)}: ${response.body}`);
      assert.equal(response.json().code, 'conflict');
    }
    for (const typed of ['alice ', 'ａｌｉｃｅ', ' Alice']) {
      const pair = await loginOk(ctx, { username: typed, password: STRONG_PASSWORD });
      assert.equal(pair.user_name, 'alice');
    }
    // Stored in canonical form.
    const spaced = await create('  ｂｏｂ  ');
    assert.equal(spaced.statusCode, 201);
    assert.equal(spaced.json().username, 'bob');
  });

  test('a Cyrillic letter among Latin ones is refused, at creation and at a rename', async () => {
    refusedName(await create('\u0430lice'), /must not mix scripts \(it has Cyrillic and Latin letters\)/);
    refusedName(await create('p\u0430ypal'), /mix scripts/);
    refusedName(await create('\u03bfmega-o'), /mix scripts/); // Greek omicron
    const user = await seedUser(ctx.db);
    refusedName(await rename(user.id, 'b\u043eb'), /mix scripts/);
    // Invisible, white space inside, a script names may not use (Cherokee Ꭺ looks like A).
    refusedName(await create('al\u200bice'), /may hold only/);
    refusedName(await create('alice smith'), /may hold only/);
    refusedName(await create('\u13aalice'), /script names may not use/);
    refusedName(await create('   '), /empty/);
  });

  test('a name in one script other than Latin, and the writing systems that mix scripts, are accepted', async () => {
    for (const name of ['алиса', 'ελένη', '田中たろう', 'ヤマダ.taro', '김철수', 'ana.maria-o_brien+shop@example.com', 'user42']) {
      const response = await create(name);
      assert.equal(response.statusCode, 201, `${name}: ${response.body}`);
      assert.equal((await loginOk(ctx, { username: name, password: STRONG_PASSWORD })).user_name, name);
    }
    // Arabic-Indic digits belong to Arabic: with Latin letters they mix.
    assert.equal(checkNewUserName('alice\u0661').ok, false);
  });

  test('the CLI applies the same rule and stores the canonical form', async () => {
    const run = (args: string[]) => runInProcess(args, { db: ctx.db, config: ctx.config, stdin: `${STRONG_PASSWORD}\n`, now: ctx.clock.now() });
    const mixed = await run(['users', 'add', '\u0430dmin', '--seller', '1']);
    assert.equal(mixed.code, 2);
    assert.match(mixed.stderr, /mix scripts/);
    const taken = await run(['users', 'add', 'ａｌｉｃｅ', '--seller', '1']);
    assert.notEqual(taken.code, 0, 'alice exists already');
    const added = await run(['users', 'add', 'carol ', '--seller', '1']);
    assert.equal(added.code, 0, added.stderr);
    assert.equal((await loginOk(ctx, { username: 'carol', password: STRONG_PASSWORD })).user_name, 'carol');
    // A lookup by name takes the canonical form too.
    assert.equal((await run(['users', 'deactivate', 'ｃａｒｏｌ'])).code, 0);
    assert.equal((await postLogin(ctx, { username: 'carol', password: STRONG_PASSWORD })).statusCode, 403);
  });

  test('a name stored before the rule still logs in as typed, unless its canonical form names another user', async () => {
    const passwordHash = await hashPassword(STRONG_PASSWORD);
    await insertUser(ctx.db, { username: 'ｄａｖｅ', passwordHash, sellerId: 1, role: 'seller', marketplaceCode: null, active: true });
    assert.equal((await loginOk(ctx, { username: 'ｄａｖｅ', password: STRONG_PASSWORD })).user_name, 'ｄａｖｅ');
    await insertUser(ctx.db, { username: 'erin ', passwordHash, sellerId: 1, role: 'seller', marketplaceCode: null, active: true });
    await insertUser(ctx.db, { username: 'erin', passwordHash: await hashPassword(OTHER_STRONG_PASSWORD), sellerId: 1, role: 'seller', marketplaceCode: null, active: true });
    assert.equal((await loginOk(ctx, { username: 'erin ', password: OTHER_STRONG_PASSWORD })).user_name, 'erin');
  });

  // Issue 35: the portal's sign-in form had a user-name schema of its own (at most 200 characters, nothing more).
  test('the portal sign-in takes the names the API login takes: 200 characters are looked up, 201, none, a tab or a line break refused by both', async () => {
    const portalLogin = (username: string) =>
      ctx.app.inject({ method: 'POST', url: '/portal/login', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ username, password: 'not the password' }).toString() });
    for (const [username, status] of [['u'.repeat(200), 401], ['u'.repeat(201), 400], ['', 400], ['ta\tb', 400], ['new\nline', 400]] as const) {
      const answers = [(await postLogin(ctx, { username, password: 'not the password' })).statusCode, (await portalLogin(username)).statusCode];
      assert.deepEqual(answers, [status, status], JSON.stringify(username));
    }
  });
});
