import pg from 'pg';
import { createWebhook, login } from '../lib/api.js';
import { runningDatabaseUrl, type BenchDatabase } from '../lib/database.js';
import { progress, withCleanup } from '../lib/cleanup.js';
import { runHelper } from '../lib/ipc.js';
import { Receivers } from '../lib/receivers.js';
import { met, ms, type Scenario } from '../lib/scenario.js';
import { Service } from '../lib/service.js';
import { percentile } from '../lib/stats.js';
import { MARKETPLACE, SELLER_ID, seedTenant } from './common.js';

export interface Paced {
  answeredAt: Record<string, number>;
  sent: number;
}

/** Intake 202 to arrival per event; one not delivered when the budget ran out counts as infinitely late. */
export function latenciesOf(paced: Paced, arrivals: Record<string, number>): number[] {
  return Object.entries(paced.answeredAt).map(([reference, answeredAt]) => (arrivals[reference] ?? Infinity) - answeredAt);
}

/**
 * 5: events at a steady rate to one webhook; latency is the wall time from the 202 of the intake
 * (noted by the driver) to the arrival at the receiver (noted by the receiver), both on this machine's clock.
 */
export const deliveryLatency: Scenario = {
  id: '5',
  name: 'delivery latency',
  run: (ctx) =>
    withCleanup(async (onExit) => {
      const { scale, engine } = ctx;
      const db = await ctx.newDatabase();
      const { users } = await seedTenant(db, 1);
      const receivers = await Receivers.start(1, { trackEntities: true });
      onExit(() => receivers.stop());
      const service = await Service.start(db);
      onExit(() => service.stop());
      const { token } = await login(service.baseUrl, users[0]!.username, users[0]!.password);
      await createWebhook(service.baseUrl, token, MARKETPLACE, { code: 'latency', topic: 'order/create', callback_url: `${receivers.urls[0]}/hooks/latency` });
      const target = { baseUrl: service.baseUrl, token, marketplace: MARKETPLACE, sellerId: SELLER_ID, rate: scale.latencyRate, expectDeliveries: 1 };

      const warm = await runHelper<Paced>('event-driver', 'paced', { ...target, prefix: 'warm-', durationMs: scale.warmupMs });
      await receivers.waitFor(warm.sent, { stallMs: scale.stallMs }, () => service.isRunning());
      await receivers.reset();

      progress(`${scale.latencyRate} events/s for ${scale.latencyMs / 1000} s`);
      const paced = await runHelper<Paced>('event-driver', 'paced', { ...target, prefix: 'lat-', durationMs: scale.latencyMs });
      const arrived = await receivers.waitFor(paced.sent, { stallMs: scale.stallMs, budgetMs: scale.deliveryBudgetMs }, () => service.isRunning());
      const arrivals = await receivers.arrivals();
      const latencies = latenciesOf(paced, arrivals);
      const p50 = percentile(latencies, 50);
      const p99 = percentile(latencies, 99);
      const retried = await retriedDeliveries(db);
      const label = `5 delivery latency (${arrived.complete ? latencies.length : `${arrived.unique} of ${latencies.length} arrived`} at ${scale.latencyRate}/s, ${retried})`;
      return [
        { scenario: `${label}, p50`, database: engine, figure: ms(p50), ceiling: '—', ratio: '—', target: '≤ 5 ms', met: met(p50 <= 5) },
        { scenario: `${label}, p99`, database: engine, figure: ms(p99), ceiling: '—', ratio: '—', target: '≤ 25 ms', met: met(p99 <= 25) },
      ];
    }),
};

/**
 * How many deliveries needed a second attempt, and why the first failed: a first attempt that never
 * reached the receiver waits for the first retry (5 s by default), which a p99 then shows.
 */
async function retriedDeliveries(db: BenchDatabase): Promise<string> {
  const client = new pg.Client({ connectionString: await runningDatabaseUrl(db) });
  await client.connect();
  try {
    const { rows } = await client.query<{ error: string; n: number }>(
      `SELECT coalesce(a.error, 'HTTP ' || a.status_code) AS error, count(*)::int AS n
         FROM delivery_attempts a WHERE a.status_code IS NULL OR a.status_code NOT BETWEEN 200 AND 299
        GROUP BY 1 ORDER BY 2 DESC`,
    );
    return rows.length === 0 ? 'no attempt failed' : `failed attempts: ${rows.map((row) => `${row.n} × ${row.error}`).join(', ')}`;
  } finally {
    await client.end();
  }
}
