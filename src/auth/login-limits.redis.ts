import { createHash, randomBytes } from 'node:crypto';
import { createClient, ErrorReply } from 'redis';
import { DatabaseUnavailableError } from '../db/database.js';
import { expiresAt } from './login-limit-rules.js';
import type { CounterStore, Counters, Plan } from './login-limit-types.js';

/** How a 503 names Redis when it cannot be reached: the database itself may be fine. */
const REDIS_STORE = 'login-limit store (Redis)';

/**
 * Login-limit counters in Redis (REDIS_URL), for deployments that already run it. Storage only,
 * like the SQL store: the rules come in as the `plan` function (login-limit-rules.ts), so both
 * stores apply one definition. Each counter is a hash {f: failures, w: window start, b: blocked
 * until (0: none), v: version} in epoch ms; a key expires by itself once its window and cooldown
 * are over. One Redis (or a primary with replicas) only: the keys of an attempt may live in
 * different cluster slots.
 */

// Compare-and-set over several keys. KEYS: the counters. ARGV: first the version each key had when
// it was read ('' = absent), then per key six values: op ('set', 'del' or 'keep'), f, w, b, the new
// version, the time to live in ms. Writes nothing and returns 0 when any key changed since the read.
const COMPARE_AND_SET = `
local n = #KEYS
for i = 1, n do
  if (redis.call('HGET', KEYS[i], 'v') or '') ~= ARGV[i] then return 0 end
end
for i = 1, n do
  local at = n + 6 * (i - 1)
  local op = ARGV[at + 1]
  if op == 'del' then
    redis.call('DEL', KEYS[i])
  elseif op == 'set' then
    redis.call('HSET', KEYS[i], 'f', ARGV[at + 2], 'w', ARGV[at + 3], 'b', ARGV[at + 4], 'v', ARGV[at + 5])
    redis.call('PEXPIRE', KEYS[i], ARGV[at + 6])
  end
end
return 1
`;
const SCRIPT_SHA = createHash('sha1').update(COMPARE_AND_SET).digest('hex');

const CONNECT_WAIT_MS = 3000;
// Each retry means another attempt on the same counters committed in between, i.e. progress; this
// many in a row means Redis is not usable right now (503) rather than a loop without end.
const MAX_ROUNDS = 100;

export class RedisCounterStore implements CounterStore {
  private readonly client;
  private connecting: Promise<void> | undefined;

  constructor(
    url: string,
    private readonly prefix: string,
  ) {
    this.client = createClient({
      url,
      // Fail fast while Redis is away (the API answers 503) instead of queueing logins forever.
      disableOfflineQueue: true,
      socket: { connectTimeout: CONNECT_WAIT_MS, reconnectStrategy: (retries) => Math.min(100 * 2 ** retries, 5000) },
    });
    // Errors surface on the commands; without a listener the client would crash the process.
    this.client.on('error', () => {});
  }

  /** Optimistic: read, plan, compare-and-set; again from a fresh read when another caller got in between. */
  async apply(keys: string[], now: Date, plan: (counters: Counters) => Plan): Promise<Plan> {
    const stored = keys.map((key) => this.prefix + key);
    return this.guard(async () => {
      for (let round = 0; round < MAX_ROUNDS; round++) {
        const rows = await Promise.all(stored.map((key) => this.client.hmGet(key, ['f', 'w', 'b', 'v'])));
        const counters = new Map(
          rows.flatMap(([f, w, b], i) => (f == null || w == null ? [] : [[keys[i]!, { failures: Number(f), windowStartedAt: Number(w), blockedUntil: Number(b) > 0 ? Number(b) : null }] as const])),
        );
        const planned = plan(counters);
        if (planned.writes.size === 0) return planned;
        const args = rows.map((row) => row[3] ?? '');
        for (const key of keys) {
          const state = planned.writes.get(key);
          if (state === undefined) args.push('keep', '', '', '', '', '');
          else if (state === null) args.push('del', '', '', '', '', '');
          else {
            // A random version rather than a count: a key deleted and created again never repeats one.
            const ttl = Math.max(expiresAt(state) - now.getTime(), 0) + 1000;
            args.push('set', String(state.failures), String(state.windowStartedAt), String(state.blockedUntil ?? 0), randomBytes(8).toString('hex'), String(ttl));
          }
        }
        if (Number(await this.compareAndSet(stored, args)) === 1) return planned;
      }
      throw new DatabaseUnavailableError(new Error(`login limits: ${MAX_ROUNDS} conflicting writes in a row`), REDIS_STORE);
    });
  }

  async close(): Promise<void> {
    if (!this.client.isOpen) return;
    if (this.client.isReady) await this.client.close().catch(() => this.client.destroy());
    else this.client.destroy();
  }

  private async compareAndSet(keys: string[], args: string[]): Promise<unknown> {
    const options = { keys, arguments: args };
    try {
      return await this.client.evalSha(SCRIPT_SHA, options);
    } catch (error) {
      if (!String((error as Error).message).startsWith('NOSCRIPT')) throw error;
      return await this.client.eval(COMPARE_AND_SET, options);
    }
  }

  /**
   * Connects on first use and waits a little for the connection; while Redis is away the client
   * keeps reconnecting in the background and commands fail at once (no offline queue).
   */
  private async connected(): Promise<void> {
    if (!this.client.isOpen) this.connecting = this.client.connect().then(() => undefined, () => undefined);
    if (this.client.isReady) return;
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise((resolve) => (timer = setTimeout(resolve, CONNECT_WAIT_MS)));
    await Promise.race([this.connecting, waited]);
    clearTimeout(timer);
  }

  private async guard<T>(work: () => Promise<T>): Promise<T> {
    try {
      await this.connected();
      return await work();
    } catch (error) {
      if (error instanceof DatabaseUnavailableError) throw error;
      // A reply error is a bug here (500); anything else means Redis is not there right now (503).
      throw error instanceof ErrorReply ? error : new DatabaseUnavailableError(error, REDIS_STORE);
    }
  }
}
