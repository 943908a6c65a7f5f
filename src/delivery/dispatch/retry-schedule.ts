/**
 * When the next attempt of a delivery happens: the configured schedule with jitter, or what the
 * receiver asked for with Retry-After (429/503), bounded so that a receiver cannot park a delivery.
 */

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "5s,30s,2m,1h" → delays in milliseconds; throws naming a bad entry (an empty one too: `5s,,30s` is a typo, not a schedule). */
export function parseRetrySchedule(text: string): number[] {
  if (text.trim() === '') return [];
  return text
    .split(',')
    .map((entry) => entry.trim())
    .map((entry, index) => {
      if (entry === '') throw new Error(`entry ${index + 1} is empty; write delays like 5s,30s,2m separated by single commas`);
      const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(entry);
      if (!match) throw new Error(`"${entry}" is not a delay like 5s, 2m, 1h`);
      return Math.round(Number(match[1]) * UNITS[match[2]!]!);
    });
}

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
