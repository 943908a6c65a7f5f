import type { FeatureDeps } from '../../deps.js';
import { parseRetrySchedule } from '../../settings/retry-schedule.js';
import { attemptHealth, type HealthBucketRow } from './attempt-health.repository.js';

const HOUR_MS = 3_600_000;

/**
 * The two windows of the portal's health chart: the last 24 hours per hour, and the last 7 days per
 * 6 hours (28 bars, and a table a screen reader can go through; 168 hourly bars would be neither).
 * Buckets are aligned to UTC hours (6-hour ones to 00, 06, 12, 18 UTC); the last one holds "now".
 */
export const HEALTH_WINDOWS = [
  { key: 'day', label: 'Last 24 hours', bucketLabel: 'hour', bucketMs: HOUR_MS, buckets: 24 },
  { key: 'week', label: 'Last 7 days', bucketLabel: '6 hours', bucketMs: 6 * HOUR_MS, buckets: 28 },
] as const;
export type HealthWindowSpec = (typeof HEALTH_WINDOWS)[number];

export interface HealthBucket {
  start: Date;
  succeeded: number;
  failed: number;
  noAnswer: number;
  p50: number | null;
  p95: number | null;
}

export interface WebhookHealth {
  window: HealthWindowSpec;
  since: Date;
  until: Date;
  /** Every bucket of the window, oldest first, empty ones included. */
  buckets: HealthBucket[];
  total: Omit<HealthBucket, 'start'>;
}

/**
 * How long after its creation a delivery may still be attempted on its retry schedule: each delay at
 * its most jitter, or the longest Retry-After a receiver may ask for when that is longer. Attempts of
 * deliveries created longer before the window (a replay or a manual retry of an older delivery, one
 * held by a pause) are left out of the chart: that bound keeps its query on the webhook's recent
 * deliveries (attempt-health.repository.ts).
 */
export function retryLookbackMs(config: Pick<FeatureDeps['config'], 'DELIVERY_RETRY_SCHEDULE' | 'DELIVERY_RETRY_JITTER' | 'DELIVERY_RETRY_AFTER_MAX_SECONDS'>): number {
  return parseRetrySchedule(config.DELIVERY_RETRY_SCHEDULE).reduce(
    (sum, delay) => sum + Math.max(Math.ceil(delay * (1 + config.DELIVERY_RETRY_JITTER)), config.DELIVERY_RETRY_AFTER_MAX_SECONDS * 1000),
    0,
  );
}

const bucketOf = (row: HealthBucketRow | undefined, start: Date): HealthBucket => ({
  start,
  succeeded: row?.succeeded ?? 0,
  failed: row?.failed ?? 0,
  noAnswer: row?.no_answer ?? 0,
  p50: row?.p50 === null || row?.p50 === undefined ? null : Math.round(Number(row.p50)),
  p95: row?.p95 === null || row?.p95 === undefined ? null : Math.round(Number(row.p95)),
});

/** A webhook's attempts per bucket and outcome, and response times, over each window up to the clock's now. */
export function webhookHealth({ db, clock, config }: Pick<FeatureDeps, 'db' | 'clock' | 'config'>) {
  const lookbackMs = retryLookbackMs(config);
  const one = async (webhookId: number, window: HealthWindowSpec): Promise<WebhookHealth> => {
    const now = clock.now().getTime();
    const until = new Date(Math.floor(now / window.bucketMs) * window.bucketMs + window.bucketMs);
    const since = new Date(until.getTime() - window.buckets * window.bucketMs);
    const rows = await attemptHealth(db, { webhookId, since, until, bucketMs: window.bucketMs, lookbackMs });
    const byStart = new Map(rows.filter((row) => row.bucket !== null).map((row) => [new Date(row.bucket!).getTime(), row]));
    const buckets = Array.from({ length: window.buckets }, (_, index) => {
      const start = new Date(since.getTime() + index * window.bucketMs);
      return bucketOf(byStart.get(start.getTime()), start);
    });
    const { start: _start, ...total } = bucketOf(rows.find((row) => row.bucket === null), since);
    return { window, since, until, buckets, total };
  };
  return {
    /** Both windows (HEALTH_WINDOWS), one statement each. */
    all: (webhookId: number) => Promise.all(HEALTH_WINDOWS.map((window) => one(webhookId, window))),
    one,
  };
}
