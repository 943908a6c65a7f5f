import { randomBytes } from 'node:crypto';
import { buildApp, type App } from '../app.js';
import { ManualClock } from '../clock.js';
import { loadConfig, type Config } from '../config.js';
import { generateKeys, type Keys } from '../keys.js';
import { createTestDatabase, type TestDatabase } from './test-database.js';

export interface TestContext {
  app: App;
  db: TestDatabase;
  config: Config;
  keys: Keys;
  clock: ManualClock;
  close(): Promise<void>;
}

/**
 * The real app on a fresh database with a manual clock. Pass env-style overrides:
 * `createTestApp({ REFRESH_REUSE_GRACE_SECONDS: '10' })`.
 */
export async function createTestApp(env: Record<string, string> = {}, options: { clock?: ManualClock } = {}): Promise<TestContext> {
  // A Redis key prefix of its own: test databases reuse user ids, a shared Redis would mix their counters.
  const config = loadConfig({ LOG_LEVEL: 'silent', WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8', REDIS_KEY_PREFIX: `plaza-test:${randomBytes(6).toString('hex')}:`, ...env });
  const [db, keys] = await Promise.all([createTestDatabase(), generateKeys()]);
  const clock = options.clock ?? new ManualClock(new Date());
  const app = await buildApp({ config, db, keys, clock, logger: false });
  await app.ready();
  return {
    app,
    db,
    config,
    keys,
    clock,
    async close() {
      await app.close();
      await db.close();
    },
  };
}
