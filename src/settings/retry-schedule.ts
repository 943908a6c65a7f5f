// The value of DELIVERY_RETRY_SCHEDULE, read by config.ts (checked at start-up) and by the delivery
// attempt (delivery/dispatch/retry-schedule.ts).

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
