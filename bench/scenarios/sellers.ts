import { loadConfig } from '../../src/config.js';
import { createWebhook, login } from '../lib/api.js';
import { progress, withCleanup } from '../lib/cleanup.js';
import { runHelper } from '../lib/ipc.js';
import { Receivers } from '../lib/receivers.js';
import { met, ms, seconds, times, type Scenario } from '../lib/scenario.js';
import { Service } from '../lib/service.js';
import { percentile } from '../lib/stats.js';
import { MARKETPLACE, SELLER_ID, seedTenant } from './common.js';
import { latenciesOf, type Paced } from './latency.js';

const SELLER_B = 2;
const ANSWER_AFTER_MS = 400;
const B_EVERY_MS = 250;
const WARM_UP_EVENTS = 10;
const INTAKE_CONCURRENCY = 16;
/** The per-webhook cap the service runs with here (its default): A's backlog drains at best this many at a time. */
const IN_FLIGHT = loadConfig({}).DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK;

/**
 * 11: the marketplace's one webhook for all its sellers (`seller_id` `*`), on a receiver that
 * answers every notification 400 ms after it arrived. Seller A (seller 1) posts a burst of events
 * (300; 50 in smoke mode) as fast as the API takes them; then, while that backlog drains (at best
 * burst × 400 ms / 10 in flight: 12 s), seller B (seller 2) posts one event every 250 ms for three
 * quarters of that time. B's latency, intake 202 to arrival: a webhook whose slots went in due order
 * would make each of B's notifications wait behind A's whole backlog.
 */
export const sellerFairness: Scenario = {
  id: '11',
  name: 'sellers in a shared webhook',
  run: (ctx) =>
    withCleanup(async (onExit) => {
      const { scale, engine } = ctx;
      const burst = scale.smoke ? 50 : 300;
      const bestDrainMs = (burst * ANSWER_AFTER_MS) / IN_FLIGHT;
      const db = await ctx.newDatabase();
      const receivers = await Receivers.start(1, { trackEntities: true, answerAfterMs: ANSWER_AFTER_MS });
      onExit(() => receivers.stop());
      const seeded = await seedTenant(db, 1, { otherSellers: [SELLER_B], marketplaceUser: 'bench-marketplace' });
      const service = await Service.start(db);
      onExit(() => service.stop());
      const [a, b, marketplace] = await Promise.all(
        [seeded.users[0]!, seeded.otherSellerUsers[0]!, seeded.marketplaceUser!].map((user) => login(service.baseUrl, user.username, user.password)),
      );
      await createWebhook(service.baseUrl, marketplace!.token, MARKETPLACE, { code: 'all-sellers', topic: 'order/create', callback_url: `${receivers.urls[0]}/hooks/all`, seller_id: '*' });
      const sellerA = { baseUrl: service.baseUrl, token: a!.token, marketplace: MARKETPLACE, sellerId: SELLER_ID, expectDeliveries: 1 };
      const sellerB = { ...sellerA, token: b!.token, sellerId: SELLER_B };

      // Both sellers' paths once through the slow receiver (connections, JIT), then counted afresh;
      // not in smoke mode, whose figures mean nothing anyway (it saves a few seconds of CI).
      if (!scale.smoke) {
        for (const [seller, prefix] of [[sellerA, 'warm-a-'], [sellerB, 'warm-b-']] as const) {
          await runHelper('event-driver', 'preload', { ...seller, prefix, count: WARM_UP_EVENTS, concurrency: 4 });
        }
        await receivers.waitFor(2 * WARM_UP_EVENTS, { stallMs: scale.stallMs }, () => service.isRunning());
        await receivers.reset();
      }

      progress(`seller A: ${burst} events at once; seller B: one every ${B_EVERY_MS} ms while they drain; the receiver answers after ${ANSWER_AFTER_MS} ms`);
      const posted = await runHelper<{ elapsedMs: number; startedAt: number }>('event-driver', 'preload', { ...sellerA, prefix: 'a-', count: burst, concurrency: INTAKE_CONCURRENCY });
      const paced = await runHelper<Paced>('event-driver', 'paced', { ...sellerB, prefix: 'b-', rate: 1000 / B_EVERY_MS, durationMs: bestDrainMs * 0.75 });
      const arrived = await receivers.waitFor(burst + paced.sent, { stallMs: scale.stallMs, budgetMs: scale.deliveryBudgetMs }, () => service.isRunning());
      const arrivals = await receivers.arrivals();

      const latencies = latenciesOf(paced, arrivals);
      const p50 = percentile(latencies, 50);
      const p99 = percentile(latencies, 99);
      const ofA = Object.entries(arrivals).filter(([entity]) => entity.startsWith('a-'));
      const drained = ofA.length === burst;
      const drainMs = Math.max(...ofA.map(([, at]) => at)) - posted.startedAt;
      // B's events answered after A's last arrival met no backlog of A's: the label counts those that did.
      const backlogUntil = drained ? posted.startedAt + drainMs : Infinity;
      const duringDrain = Object.values(paced.answeredAt).filter((at) => at < backlogUntil).length;
      const bArrived = arrived.complete ? `${latencies.length}` : `${latencies.filter(Number.isFinite).length} of ${latencies.length} arrived`;
      const label = `11 sellers in a shared webhook (B: ${bArrived}, ${duringDrain} posted while A's ${burst} drained; receiver ${ANSWER_AFTER_MS} ms)`;
      const aArrived = drained ? `${burst}` : ofA.length === 0 ? `none of ${burst} arrived` : `${ofA.length} of ${burst} arrived, the last ${seconds(drainMs)} after the start`;
      return [
        { scenario: `${label}, B's p50`, database: engine, figure: ms(p50), ceiling: '—', ratio: '—', target: 'reported', met: 'n/a' },
        { scenario: `${label}, B's p99`, database: engine, figure: ms(p99), ceiling: '—', ratio: '—', target: '≤ 500 ms', met: met(p99 <= 500) },
        {
          scenario: `11 sellers in a shared webhook, A's drain (${aArrived}; posted in ${seconds(posted.elapsedMs)})`,
          database: engine,
          figure: drained ? seconds(drainMs) : 'not drained',
          ceiling: `${seconds(bestDrainMs)} (${burst} × ${ANSWER_AFTER_MS} ms / ${IN_FLIGHT} in flight)`,
          ratio: drained ? times(drainMs / bestDrainMs) : '—',
          target: 'reported',
          met: 'n/a',
        },
      ];
    }),
};
