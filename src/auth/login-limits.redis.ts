import { createHash } from 'node:crypto';
import { createClient, ErrorReply } from 'redis';
import { DatabaseUnavailableError } from '../db/database.js';
import { LOGIN_LIMIT_WINDOW_SECONDS, type AttemptKeys, type LimitKey } from './login-limit-keys.js';
import { retryAfterSeconds, type Cooldowns } from './login-limit-rules.js';
import type { LimitDecision } from './login-limits.js';

/**
 * Login-limit counters in Redis (REDIS_URL), for deployments that already run it. Each counter is
 * a hash {f: failures, w: window start, b: blocked until} in epoch ms. The scripts below are the
 * rules of login-limit-rules.ts in Lua: a script runs atomically, so parallel attempts serialise
 * exactly as the SQL store's row locks make them. A key expires by itself once its window and
 * cooldown are over. One Redis (or a primary with replicas) only: the three keys of an attempt
 * may live in different cluster slots.
 */

// KEYS: the three counters. ARGV: now, window, base cooldown, max cooldown (ms), then per key
// its threshold and 1 when its window slides. Returns 0 (reserved) or the ms still to wait.
const RESERVE = `
local now, window, base, maxcd = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local states, blocked = {}, 0
for i, key in ipairs(KEYS) do
  local v = redis.call('HMGET', key, 'f', 'w', 'b')
  local f, w, b = tonumber(v[1]) or 0, tonumber(v[2]) or now, tonumber(v[3]) or 0
  if b > now then
    if b > blocked then blocked = b end
  elseif f == 0 or now >= w + window then
    f, w = 0, now
  end
  states[i] = {f, w}
end
if blocked > 0 then return blocked - now end
for i, key in ipairs(KEYS) do
  local threshold, sliding = tonumber(ARGV[3 + 2 * i]), ARGV[4 + 2 * i] == '1'
  local f, w = states[i][1] + 1, states[i][2]
  if sliding then w = now end
  local b = 0
  if f >= threshold then b = now + math.min(maxcd, base * 2 ^ math.min(f - threshold, 40)) end
  redis.call('HSET', key, 'f', f, 'w', w, 'b', b)
  redis.call('PEXPIRE', key, math.max(w + window, b) - now + 1000)
end
return 0
`;

// KEYS: pair, user, ip. ARGV: thresholds of user and ip. Forgets the pair, takes the reservation
// back on the others (their cooldown goes only below the threshold).
const UNDO = `
redis.call('DEL', KEYS[1])
for i = 2, 3 do
  local f = tonumber(redis.call('HGET', KEYS[i], 'f'))
  if f then
    f = math.max(f - 1, 0)
    if f < tonumber(ARGV[i - 1]) then redis.call('HSET', KEYS[i], 'f', f, 'b', 0) else redis.call('HSET', KEYS[i], 'f', f) end
  end
end
return 0
`;

const CONNECT_WAIT_MS = 3000;

const sha1 = (script: string) => createHash('sha1').update(script).digest('hex');
const SCRIPTS = { reserve: { text: RESERVE, sha: sha1(RESERVE) }, undo: { text: UNDO, sha: sha1(UNDO) } };

export class RedisLimitStore {
  private readonly client;
  private connecting: Promise<void> | undefined;

  constructor(
    url: string,
    private readonly cooldowns: Cooldowns,
    private readonly prefix = 'plaza:login:',
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

  async attempt(keys: AttemptKeys, now: Date): Promise<LimitDecision> {
    const rules = [keys.pair, keys.user, keys.ip];
    const args = [now.getTime(), LOGIN_LIMIT_WINDOW_SECONDS * 1000, this.cooldowns.baseSeconds * 1000, this.cooldowns.maxSeconds * 1000];
    for (const rule of rules) args.push(rule.threshold, rule.sliding ? 1 : 0);
    const waitMs = Number(await this.run('reserve', rules, args));
    return waitMs > 0 ? { allowed: false, retryAfterSeconds: retryAfterSeconds(now.getTime() + waitMs, now.getTime()) } : { allowed: true };
  }

  async succeeded(keys: AttemptKeys, _now: Date): Promise<void> {
    await this.run('undo', [keys.pair, keys.user, keys.ip], [keys.user.threshold, keys.ip.threshold]);
  }

  async close(): Promise<void> {
    if (!this.client.isOpen) return;
    if (this.client.isReady) await this.client.close().catch(() => this.client.destroy());
    else this.client.destroy();
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

  private async run(name: keyof typeof SCRIPTS, rules: LimitKey[], args: number[]): Promise<unknown> {
    const script = SCRIPTS[name];
    const options = { keys: rules.map((rule) => this.prefix + rule.key), arguments: args.map(String) };
    try {
      await this.connected();
      try {
        return await this.client.evalSha(script.sha, options);
      } catch (error) {
        if (!String((error as Error).message).startsWith('NOSCRIPT')) throw error;
        return await this.client.eval(script.text, options);
      }
    } catch (error) {
      // A reply error is a bug here (500); anything else means Redis is not there right now (503).
      throw error instanceof ErrorReply ? error : new DatabaseUnavailableError(error);
    }
  }
}
