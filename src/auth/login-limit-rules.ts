import type { Config } from '../config.js';
import { LOGIN_LIMIT_WINDOW_SECONDS, type LimitKey } from './login-limit-keys.js';

/**
 * The rules of the login limits as pure functions over one counter's state, so the SQL store
 * applies exactly what is tested here. The Redis store's Lua script (login-limits.redis.ts)
 * mirrors them line by line; the same tests run against both.
 */
export interface CounterState {
  failures: number;
  /** Start of the window (for a sliding key: the time of the last failure). */
  windowStartedAt: number;
  /** Epoch milliseconds until which every attempt is refused; null when not cooling down. */
  blockedUntil: number | null;
}

export interface Cooldowns {
  baseSeconds: number;
  maxSeconds: number;
}

export const cooldownsOf = (config: Config): Cooldowns => ({
  baseSeconds: config.LOGIN_COOLDOWN_BASE_SECONDS,
  maxSeconds: config.LOGIN_COOLDOWN_MAX_SECONDS,
});

const WINDOW_MS = LOGIN_LIMIT_WINDOW_SECONDS * 1000;

/**
 * The cooldown after the `failures`-th failure: none below the threshold, then base, 2·base,
 * 4·base … capped at max. With threshold 3: failures 1 and 2 are free, the 3rd makes the next
 * attempt wait 1 s, the 4th 2 s, the 5th 4 s.
 */
export function cooldownMs(failures: number, threshold: number, cooldowns: Cooldowns): number {
  if (failures < threshold) return 0;
  const doublings = Math.min(failures - threshold, 40);
  return Math.min(cooldowns.maxSeconds, cooldowns.baseSeconds * 2 ** doublings) * 1000;
}

export const isCoolingDown = (state: CounterState | undefined, now: number): boolean =>
  state?.blockedUntil != null && state.blockedUntil > now;

/** The state as it stands at `now`: a counter whose window and cooldown are both over starts fresh. */
export function currentState(state: CounterState | undefined, now: number): CounterState {
  if (!state || isCoolingDown(state, now)) return state ?? { failures: 0, windowStartedAt: now, blockedUntil: null };
  if (state.failures === 0 || now >= state.windowStartedAt + WINDOW_MS) return { failures: 0, windowStartedAt: now, blockedUntil: null };
  return { ...state, blockedUntil: null };
}

/** Counts one failure (the reservation made before a password is verified) and sets the next cooldown. */
export function reserveFailure(state: CounterState, rule: LimitKey, cooldowns: Cooldowns, now: number): CounterState {
  const failures = state.failures + 1;
  const cooldown = cooldownMs(failures, rule.threshold, cooldowns);
  return {
    failures,
    windowStartedAt: rule.sliding ? now : state.windowStartedAt,
    blockedUntil: cooldown > 0 ? now + cooldown : null,
  };
}

/**
 * After a correct password, the reservation is taken back. The cooldown goes only when the count
 * falls below the threshold; above it, an attacker had already earned one, and keeping it (rather
 * than guessing which failure set it) never makes the limit weaker.
 */
export function undoReservation(state: CounterState, rule: LimitKey): CounterState {
  const failures = Math.max(state.failures - 1, 0);
  return { ...state, failures, blockedUntil: failures < rule.threshold ? null : state.blockedUntil };
}

/** The whole seconds a refused client must wait: rounded up, never 0. */
export const retryAfterSeconds = (blockedUntil: number, now: number): number =>
  Math.max(1, Math.ceil((blockedUntil - now) / 1000));

/** A row whose window began before this moment is over, cooldown included, whatever its kind. */
export const expiredBefore = (now: number, cooldowns: Cooldowns): number => now - WINDOW_MS - cooldowns.maxSeconds * 1000;
