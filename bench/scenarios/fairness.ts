import { createWebhook, login } from '../lib/api.js';
import { progress, withCleanup } from '../lib/cleanup.js';
import { runHelper } from '../lib/ipc.js';
import { Receivers } from '../lib/receivers.js';
import { met, ms, type Scenario } from '../lib/scenario.js';
import { Service } from '../lib/service.js';
import { percentile } from '../lib/stats.js';
import { MARKETPLACE, SELLER_ID, seedTenant } from './common.js';
import { latenciesOf, type Paced } from './latency.js';

const RATE = 100;
const HANGING_WEBHOOKS = 10;

/**
 * 10: tenant A (the marketplace) has 10 webhooks whose receivers never answer; tenant B (seller 1)
 * has one healthy webhook. Every event goes to all 11. B's latency, intake 202 to arrival, at
 * 100 events/s: without fairness A's hanging requests (10 webhooks × 10 in flight) would hold all
 * the worker's slots and B would wait for A's timeouts.
 */
export const tenantFairness: Scenario = {
  id: '10',
  name: 'tenant fairness',
  run: (ctx) =>
    withCleanup(async (onExit) => {
      const { scale, engine } = ctx;
      const db = await ctx.newDatabase();
      const hanging = Array.from({ length: HANGING_WEBHOOKS }, (_, i) => i);
      const receivers = await Receivers.start(HANGING_WEBHOOKS + 1, { hanging, trackEntities: true });
      onExit(() => receivers.stop());
      const { users } = await seedTenant(db, 1, {
        webhooks: { count: HANGING_WEBHOOKS, topic: 'order/create', urls: receivers.urls.slice(0, HANGING_WEBHOOKS), tenant: { kind: 'marketplace', id: MARKETPLACE } },
      });
      const service = await Service.start(db);
      onExit(() => service.stop());
      const { token } = await login(service.baseUrl, users[0]!.username, users[0]!.password);
      await createWebhook(service.baseUrl, token, MARKETPLACE, { code: 'tenant-b', topic: 'order/create', callback_url: `${receivers.urls[HANGING_WEBHOOKS]}/hooks/b` });
      const target = { baseUrl: service.baseUrl, token, marketplace: MARKETPLACE, sellerId: SELLER_ID, rate: RATE, expectDeliveries: HANGING_WEBHOOKS + 1 };

      // The warm-up also fills tenant A's share of the slots with hanging requests.
      const warm = await runHelper<Paced>('event-driver', 'paced', { ...target, prefix: 'warm-', durationMs: scale.warmupMs });
      await receivers.waitFor(warm.sent, { stallMs: scale.stallMs }, () => service.isRunning());
      await receivers.reset();

      progress(`${RATE} events/s for ${scale.latencyMs / 1000} s, tenant A's ${HANGING_WEBHOOKS} receivers hanging`);
      const paced = await runHelper<Paced>('event-driver', 'paced', { ...target, prefix: 'fair-', durationMs: scale.latencyMs });
      const arrived = await receivers.waitFor(paced.sent, { stallMs: scale.stallMs, budgetMs: scale.deliveryBudgetMs }, () => service.isRunning());
      const arrivals = await receivers.arrivals();
      const latencies = latenciesOf(paced, arrivals);
      const p99 = percentile(latencies, 99);
      const label = `10 tenant fairness (${arrived.complete ? latencies.length : `${arrived.unique} of ${latencies.length} arrived`} to B at ${RATE}/s, A hanging)`;
      return [{ scenario: `${label}, B's p99`, database: engine, figure: ms(p99), ceiling: '—', ratio: '—', target: '≤ 100 ms', met: met(p99 <= 100) }];
    }),
};
