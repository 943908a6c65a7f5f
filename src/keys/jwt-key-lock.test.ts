import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../clock.js';
import { loadConfig, type Config } from '../config.js';
import { loadKeys, type Keys } from '../keys.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import { eventually } from '../testing/wait.js';
import { lockJwtKeys, rotateJwtKey } from './jwt-key-ring.js';
import { rotateSecretsKey } from './rotate-secrets-key.js';

// Issue 35: the lock's SQL was written in both files; a typo in one would have let them interleave.
describe('the keys have one lock: JWT rotations and SECRETS_KEY rotations wait for whoever holds it', () => {
  let db: TestDatabase;
  let config: Config;
  let keys: Keys;
  const clock = new ManualClock(new Date());
  before(async () => {
    db = await createTestDatabase();
    config = loadConfig({ LOG_LEVEL: 'silent', SECRETS_KEY: randomBytes(32).toString('base64') });
    keys = await loadKeys(config, db, clock);
  });
  after(() => db.close());

  /** Whether a session of this database waits for an advisory lock, asked until `withinMs` has passed. */
  function someoneWaits(withinMs: number): Promise<boolean> {
    return eventually(async () => {
      const { rows } = await db.query<{ waiting: number }>(
        `SELECT count(*)::int AS waiting FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      );
      return rows[0]!.waiting > 0;
    }, { timeoutMs: withinMs });
  }

  const rotations = [
    ['a JWT rotation', () => rotateJwtKey(db, keys.secrets.key, config, clock)],
    ['a SECRETS_KEY rotation', () => rotateSecretsKey(db, keys.secrets, randomBytes(32), clock.now())],
  ] as const;
  for (const [name, rotate] of rotations) {
    test(`${name} waits while the lock is held, and goes on when it is released`, async () => {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let taken!: () => void;
      const lockTaken = new Promise<void>((resolve) => (taken = resolve));
      const holder = db.transaction(async (tx) => {
        await lockJwtKeys(tx);
        taken();
        await held;
      });
      await lockTaken;
      let finished = false;
      const rotation = rotate().then(() => void (finished = true));
      try {
        assert.equal(await someoneWaits(10_000), true, `${name} does not wait for the lock`);
        assert.equal(finished, false);
      } finally {
        release();
        await holder;
        await rotation;
      }
      assert.equal(finished, true);
    });
  }
});
