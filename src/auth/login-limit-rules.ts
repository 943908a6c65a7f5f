import type { Config } from '../config.js';
import type { AttemptKeys } from './login-limit-keys.js';
import type { CounterState, Counters, LimitDecision, Plan } from './login-limit-types.js';

/*
 * The rules of the login limits, the only place they are written: pure functions from the
 * counters of an attempt to a decision and the counters to write. Both stores (SQL and Redis) only
 * read, hand the counters to these functions and write what they return (CounterStore.apply).
 * docs/authentication.md explains the rules and why they are these.
 */

/** Counters start over once their window (and any cooldown) is over: the limits are "per hour". */
export const LOGIN_LIMIT_WINDOW_SECONDS = 3600;
const WINDOW_MS = LOGIN_LIMIT_WINDOW_SECONDS * 1000;

export interface LimitRules {
  /** Consecutive failures of one account from one address before cooldowns start (at least 1). */
  pairFreeFailures: number;
  /** Failures of one account over all addresses per hour after which each address gets only one free failure. */
  accountFailuresPerHour: number;
  /** Failures from one address over all accounts per hour before that address cools down. */
  ipFailuresPerHour: number;
  baseCooldownMs: number;
  maxCooldownMs: number;
}

export const limitRulesOf = (config: Config): LimitRules => ({
  pairFreeFailures: Math.max(config.LOGIN_FREE_FAILURES_PER_USER_IP, 1),
  accountFailuresPerHour: config.LOGIN_FAILURES_PER_USER_PER_HOUR,
  ipFailuresPerHour: config.LOGIN_FAILURES_PER_IP_PER_HOUR,
  baseCooldownMs: config.LOGIN_COOLDOWN_BASE_SECONDS * 1000,
  maxCooldownMs: config.LOGIN_COOLDOWN_MAX_SECONDS * 1000,
});

/**
 * The cooldown after the `failures`-th failure: none below `freeFailures`, then base, 2·base,
 * 4·base … capped at max, doubling from the `threshold`-th failure. With 3 and 3: failures 1
 * and 2 are free, the 3rd makes the next attempt wait 1 s, the 4th 2 s, the 5th 4 s. With 1 and 3
 * (an account under attack): the 1st and 2nd wait 1 s too, then the same.
 */
export function cooldownMs(failures: number, threshold: number, rules: LimitRules, freeFailures = threshold): number {
  if (failures < freeFailures) return 0;
  const doublings = Math.min(Math.max(failures - threshold, 0), 40);
  return Math.min(rules.maxCooldownMs, rules.baseCooldownMs * 2 ** doublings);
}

/** The counter as it stands at `now`: one whose window and cooldown are both over starts fresh. */
export function currentState(state: CounterState | undefined, now: number): CounterState {
  const fresh = { failures: 0, windowStartedAt: now, blockedUntil: null };
  if (!state) return fresh;
  if (state.blockedUntil !== null && state.blockedUntil > now) return state;
  if (state.failures === 0 || now >= state.windowStartedAt + WINDOW_MS) return fresh;
  return { ...state, blockedUntil: null };
}

const coolingUntil = (state: CounterState, now: number): number => (state.blockedUntil !== null && state.blockedUntil > now ? state.blockedUntil : 0);

/** The whole seconds a refused client must wait: rounded up, never 0. */
export const retryAfterSeconds = (blockedUntil: number, now: number): number => Math.max(1, Math.ceil((blockedUntil - now) / 1000));

function failure(state: CounterState, threshold: number, rules: LimitRules, now: number, sliding: boolean, freeFailures = threshold): CounterState {
  const failures = state.failures + 1;
  const cooldown = cooldownMs(failures, threshold, rules, freeFailures);
  return { failures, windowStartedAt: sliding ? now : state.windowStartedAt, blockedUntil: cooldown > 0 ? now + cooldown : null };
}

/**
 * Before a password is verified. Refused when the (account, address) counter or the address
 * counter cools down: nothing is written then. Otherwise the attempt is reserved as a failure on
 * all three counters at once (so parallel attempts cannot outrun the limits) and taken back by
 * planSuccess when the password is right.
 *
 * The account counter never refuses: if it did, anyone who knows a user name could keep its owner
 * out from addresses the owner never used. It only tightens: once an account has had
 * `accountFailuresPerHour` failures this hour, each (account, address) gets one free failure
 * instead of `pairFreeFailures` (the cooldowns after it are the usual ones).
 */
export function planAttempt(keys: AttemptKeys, counters: Counters, rules: LimitRules, now: number): Plan {
  const pair = currentState(counters.get(keys.pair), now);
  const account = currentState(counters.get(keys.user), now);
  const ip = currentState(counters.get(keys.ip), now);
  const blockedUntil = Math.max(coolingUntil(pair, now), coolingUntil(ip, now));
  if (blockedUntil > 0) return { decision: { allowed: false, retryAfterSeconds: retryAfterSeconds(blockedUntil, now) }, writes: new Map() };

  const underAttack = account.failures >= rules.accountFailuresPerHour;
  const writes = new Map<string, CounterState | null>([
    [keys.pair, failure(pair, rules.pairFreeFailures, rules, now, true, underAttack ? 1 : rules.pairFreeFailures)],
    [keys.user, { failures: account.failures + 1, windowStartedAt: account.windowStartedAt, blockedUntil: null }],
    [keys.ip, failure(ip, rules.ipFailuresPerHour, rules, now, false)],
  ]);
  const decision: LimitDecision = { allowed: true };
  return { decision, writes };
}

/**
 * After a correct password: the (account, address) counter is forgotten, and the reservation is
 * taken back on the others together with any cooldown, so that a success leaves neither a reserved
 * failure nor a cooldown behind. The failures of others stay counted, so the next failure from that
 * address still waits as long as before; see docs/authentication.md for why clearing the cooldown
 * gives an attacker nothing.
 */
export function planSuccess(keys: AttemptKeys, counters: Counters, now: number): Plan {
  const writes = new Map<string, CounterState | null>([[keys.pair, null]]);
  for (const key of [keys.user, keys.ip]) {
    const stored = counters.get(key);
    if (!stored) continue;
    const state = currentState(stored, now);
    const failures = Math.max(state.failures - 1, 0);
    writes.set(key, failures === 0 ? null : { failures, windowStartedAt: state.windowStartedAt, blockedUntil: null });
  }
  return { decision: { allowed: true }, writes };
}

/** When a counter may go: its window and any cooldown are over. */
export const expiresAt = (state: CounterState): number => Math.max(state.windowStartedAt + WINDOW_MS, state.blockedUntil ?? 0);

/** A row whose window began before this moment is over, cooldown included, whatever its kind. */
export const expiredBefore = (now: number, rules: LimitRules): number => now - WINDOW_MS - rules.maxCooldownMs;
