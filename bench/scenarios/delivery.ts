import { createWebhook, login } from '../lib/api.js';
import { progress, withCleanup } from '../lib/cleanup.js';
import { runHelper } from '../lib/ipc.js';
import { Receivers } from '../lib/receivers.js';
import { met, percent, perSecond, seconds, type Scenario, type ScenarioContext } from '../lib/scenario.js';
import { Service } from '../lib/service.js';
import { MARKETPLACE, SELLER_ID, seedTenant } from './common.js';
import { recordServerMemory } from './memory.js';

const WEBHOOKS = 5;
/** The service's default DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: the ceiling gets the same parallelism. */
const IN_FLIGHT_PER_RECEIVER = 10;
const INTAKE_CONCURRENCY = 16;

interface DeliveryRun {
  perSecond: number;
  spanMs: number;
  delivered: number;
  expected: number;
  receivers: Receivers;
}

/**
 * Events × 5 webhooks on local receivers. The events are taken in first by an API-only process
 * (the outbox fills up), then a worker-only process delivers them: the figure is deliveries per
 * second between the first and the last arrival, the delivery pipeline alone.
 */
async function deliverAll(ctx: ScenarioContext, scenario: string, hanging: number[], onExit: (stop: () => Promise<unknown>) => void): Promise<DeliveryRun> {
  const { scale } = ctx;
  const db = await ctx.newDatabase();
  const { users } = await seedTenant(db, 1);
  const receivers = await Receivers.start(WEBHOOKS, { hanging });
  onExit(() => receivers.stop());

  const api = await Service.start(db, { role: 'api' });
  onExit(() => api.stop());
  const { token } = await login(api.baseUrl, users[0]!.username, users[0]!.password);
  for (const [i, url] of receivers.urls.entries()) {
    await createWebhook(api.baseUrl, token, MARKETPLACE, { code: `sink-${i}`, topic: 'order/create', callback_url: `${url}/hooks/${i}` });
  }
  progress(`intake of ${scale.events} events (API only)`);
  await runHelper('event-driver', 'preload', {
    baseUrl: api.baseUrl,
    token,
    marketplace: MARKETPLACE,
    sellerId: SELLER_ID,
    prefix: 'order-',
    count: scale.events,
    concurrency: INTAKE_CONCURRENCY,
    expectDeliveries: WEBHOOKS,
  });
  ctx.state.peakRss.push({ scenario, process: 'serve --role api', mib: (await api.peakRssMiB()) ?? Number.NaN });
  await recordServerMemory(ctx, scenario, api);
  await api.stop();

  const expected = scale.events * (WEBHOOKS - hanging.length);
  progress(`delivering ${expected} notifications to healthy receivers (worker only)`);
  const worker = await Service.start(db, { role: 'worker' });
  onExit(() => worker.stop());
  const delivered = await receivers.waitFor(expected, { stallMs: scale.stallMs, budgetMs: scale.deliveryBudgetMs }, () => worker.isRunning());
  ctx.state.peakRss.push({ scenario, process: 'serve --role worker', mib: (await worker.peakRssMiB()) ?? Number.NaN });
  await recordServerMemory(ctx, scenario, worker);
  await worker.stop();
  return { perSecond: delivered.perSecond, spanMs: delivered.spanMs, delivered: delivered.unique, expected, receivers };
}

/** "20000", or "7312 of 20000 (stopped at the time budget)" when the wait budget ran out first. */
const howMany = (run: DeliveryRun) => (run.delivered >= run.expected ? `${run.expected}` : `${run.delivered} of ${run.expected}, budget reached,`);

/** 4: delivery throughput, against raw undici POSTs of the same signed body to the same receivers. */
export const deliveryThroughput: Scenario = {
  id: '4',
  name: 'delivery throughput',
  run: (ctx) =>
    withCleanup(async (onExit) => {
      const { engine, scale } = ctx;
      const run = await deliverAll(ctx, '4', [], onExit);
      ctx.state.deliveriesPerSecond = run.perSecond;

      progress('ceiling: raw undici Pool POSTs');
      await run.receivers.reset();
      const total = scale.events * WEBHOOKS;
      await runHelper('post-ceiling', 'run', { urls: run.receivers.urls, perReceiver: IN_FLIGHT_PER_RECEIVER, total, marketplace: MARKETPLACE, sellerId: SELLER_ID });
      const ceiling = await run.receivers.waitFor(total, { stallMs: scale.stallMs });
      const ratio = run.perSecond / ceiling.perSecond;
      // One engine: the embedded server is PostgreSQL too, so one target.
      const target = 0.25;
      return [
        {
          scenario: `4 delivery throughput (${howMany(run)} in ${seconds(run.spanMs)})`,
          database: engine,
          figure: perSecond(run.perSecond),
          ceiling: perSecond(ceiling.perSecond),
          ratio: percent(ratio),
          target: `≥ ${percent(target)}`,
          met: met(ratio >= target),
        },
      ];
    }),
};

/** 7: scenario 4 with one of the five receivers never answering; the four healthy ones against scenario 4's rate. */
export const noisyNeighbour: Scenario = {
  id: '7',
  name: 'noisy neighbour',
  needs: ['4'],
  run: (ctx) =>
    withCleanup(async (onExit) => {
      const baseline = ctx.state.deliveriesPerSecond;
      if (baseline === undefined) throw new Error('scenario 4 did not measure in this run');
      const run = await deliverAll(ctx, '7', [WEBHOOKS - 1], onExit);
      const ratio = run.perSecond / baseline;
      return [
        {
          scenario: `7 noisy neighbour (${howMany(run)} healthy in ${seconds(run.spanMs)})`,
          database: ctx.engine,
          figure: perSecond(run.perSecond),
          ceiling: `${perSecond(baseline)} (scenario 4)`,
          ratio: percent(ratio),
          target: '≥ 90%',
          met: met(ratio >= 0.9),
        },
      ];
    }),
};
