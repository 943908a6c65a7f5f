/**
 * When the next attempt of a delivery happens: the configured schedule with jitter, or what the
 * receiver asked for with Retry-After (429/503), bounded so that a receiver cannot park a delivery.
 */

export { parseRetrySchedule } from '../../settings/retry-schedule.js';

/**
 * The delay before the next attempt after `attemptsMade` attempts, or undefined when the schedule
 * is exhausted (the delivery fails for good). Jitter spreads retries of many deliveries that failed
 * together (a receiver outage) so they do not come back as one burst.
 */
export function nextRetryDelay(schedule: readonly number[], attemptsMade: number, jitter: number, random: () => number = Math.random): number | undefined {
  const base = schedule[attemptsMade - 1];
  if (base === undefined) return undefined;
  const factor = 1 + jitter * (2 * random() - 1);
  return Math.max(0, Math.round(base * factor));
}

/**
 * Retry-After as milliseconds from now: delta-seconds or an HTTP date (RFC 9110 §10.2.3), capped at
 * maxSeconds. Undefined when absent or unreadable (the schedule applies then).
 */
export function parseRetryAfter(value: string | string[] | undefined, now: Date, maxSeconds: number): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  let milliseconds: number;
  if (/^\d+$/.test(text)) {
    milliseconds = Number(text) * 1000;
  } else {
    // An HTTP date names its weekday and month; "-5" or "1.5" are not dates.
    const date = /[A-Za-z]/.test(text) ? Date.parse(text) : Number.NaN;
    if (Number.isNaN(date)) return undefined;
    milliseconds = date - now.getTime();
  }
  return Math.min(Math.max(0, milliseconds), maxSeconds * 1000);
}
