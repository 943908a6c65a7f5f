import { loadConfig } from '../../src/config.js';
import { createWebhook, login } from '../lib/api.js';
import { progress, withCleanup } from '../lib/cleanup.js';
import type { BenchDatabase } from '../lib/database.js';
import { meteredDelivery, type DeliveryRun } from '../lib/delivery-run.js';
import { runHelper } from '../lib/ipc.js';
import { Receivers } from '../lib/receivers.js';
import { met, percent, perSecond, seconds, type Row, type Scenario, type ScenarioContext } from '../lib/scenario.js';
import { Service } from '../lib/service.js';
import { runGraphileWorkerPeer } from '../peers/graphile-worker.js';
import { MARKETPLACE, SELLER_ID, seedTenant } from './common.js';
import { cpuPer, cpuRow, fleetRows, howMany, peerRows } from './delivery-rows.js';
import { DatabaseCpu } from '../lib/cpu.js';
import { recordServerMemory } from './memory.js';

const WEBHOOKS = 5;
/** The service's defaults, which it runs with here: the ceiling and the peer get the same parallelism. */
const PLAZA = loadConfig({});
const IN_FLIGHT_PER_RECEIVER = PLAZA.DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK;
const INTAKE_CONCURRENCY = 16;
/** Worker processes on one database in scenario 4's further rows: how the fleet grows. */
const FLEETS = [2, 4];

interface Outbox {
  db: BenchDatabase;
  /** The API-only process that took the events in; it stays up, idle, while the outbox is delivered. */
  api: Service;
  /** Events per second the API took in, INTAKE_CONCURRENCY requests at a time. */
  intakePerSecond: number;
  /** The intake's CPU: the API process's and the database backends' (the load generator's is not counted). */
  intakeCpu: { plazaMs: number; database: { ms: number } | { unknown: string } };
}

/** What fills the outbox: `order/create` events (scenario 4), or publication updates (scenario 12). */
type EventKind = 'orders' | 'publication-updates';
/** Scenario 12: each publication gets this many revisions, so all but its first have computed changes. */
const REVISIONS = 10;

/**
 * A new database whose outbox holds `scale.events` events × the receivers' webhooks (order-<i>),
 * taken in by an API-only process. It stays up while workers deliver (on the embedded way it runs
 * the server they join) and its CPU counts with theirs; the caller stops it. `memoryOf` notes its
 * memory for scenario 8.
 */
async function fillOutbox(ctx: ScenarioContext, receivers: Receivers, onExit: (stop: () => Promise<unknown>) => void, memoryOf?: string, kind: EventKind = 'orders'): Promise<Outbox> {
  const db = await ctx.newDatabase();
  const { users, connectionId } = await seedTenant(db, 1);
  const api = await Service.start(db, { role: 'api' });
  onExit(() => api.stop());
  const { token } = await login(api.baseUrl, users[0]!.username, users[0]!.password);
  const topic = kind === 'orders' ? 'order/create' : 'publication/update';
  for (const [i, url] of receivers.urls.entries()) {
    await createWebhook(api.baseUrl, token, MARKETPLACE, { code: `sink-${i}`, topic, callback_url: `${url}/hooks/${i}` });
  }
  progress(`intake of ${ctx.scale.events} ${kind === 'orders' ? 'order events' : 'publication updates'} (API only)`);
  const apiCpuFrom = (await api.cpuMs()) ?? Number.NaN;
  const databaseCpu = await DatabaseCpu.start(db);
  const intake = await runHelper<{ elapsedMs: number }>('event-driver', 'preload', {
    baseUrl: api.baseUrl,
    token,
    marketplace: MARKETPLACE,
    sellerId: SELLER_ID,
    prefix: 'order-',
    count: ctx.scale.events,
    concurrency: INTAKE_CONCURRENCY,
    expectDeliveries: WEBHOOKS,
    ...(kind === 'orders' ? {} : { publications: { connectionId, count: Math.ceil(ctx.scale.events / REVISIONS) } }),
  });
  const intakeCpu = { database: await databaseCpu.stop(), plazaMs: ((await api.cpuMs()) ?? Number.NaN) - apiCpuFrom };
  if (memoryOf) {
    ctx.state.peakRss.push({ scenario: memoryOf, process: 'serve --role api', mib: (await api.peakRssMiB()) ?? Number.NaN });
    await recordServerMemory(ctx, memoryOf, api);
  }
  return { db, api, intakePerSecond: (ctx.scale.events * 1000) / intake.elapsedMs, intakeCpu };
}

/**
 * The intake's rate while an outbox filled, and its CPU per event: figures without target (the
 * deliveries are what scenario 4 measures).
 */
function intakeRows(label: string, engine: Row['database'], outbox: Outbox, events: number): Row[] {
  const cpu = cpuPer(outbox.intakeCpu, events, 'Plaza');
  const row = { database: engine, ceiling: '—', ratio: '—', target: '—', met: 'n/a' } as const;
  return [
    { ...row, scenario: `${label} intake (${INTAKE_CONCURRENCY} requests at a time, ${WEBHOOKS} webhooks each)`, figure: `${perSecond(outbox.intakePerSecond)} events` },
    { ...row, scenario: `${label} intake, CPU per event (${cpu.parts})`, figure: cpu.micros === undefined ? 'unknown' : `${cpu.micros} µs` },
  ];
}

/**
 * `workers` worker-only processes deliver the outbox until `expected` notifications have arrived:
 * deliveries per second between the first and the last arrival, the delivery pipeline alone, and the
 * CPU of Plaza's processes (the workers from the end of their start-up, the idle API) and of the
 * database's backends meanwhile.
 */
async function deliverOutbox(ctx: ScenarioContext, outbox: Outbox, receivers: Receivers, workers: number, expected: number, onExit: (stop: () => Promise<unknown>) => void, memoryOf?: string): Promise<DeliveryRun> {
  progress(`delivering ${expected} notifications to healthy receivers (${workers} worker process${workers === 1 ? '' : 'es'})`);
  const started: Service[] = [];
  const run = await meteredDelivery(ctx, outbox.db, receivers, expected, {
    start: async () => {
      const api = { cpuMs: () => outbox.api.cpuMs(), fromMs: (await outbox.api.cpuMs()) ?? Number.NaN };
      const fleet = Array.from({ length: workers }, () =>
        Service.start(outbox.db, { role: 'worker' }).then((worker) => {
          started.push(worker);
          onExit(() => worker.stop());
          return worker;
        }),
      );
      const ready = await Promise.all(fleet);
      return [api, ...ready.map((worker) => ({ cpuMs: () => worker.cpuMs(), fromMs: worker.cpuAtReadyMs }))];
    },
    isAlive: () => started.every((worker) => worker.isRunning()),
  });
  if (memoryOf) {
    for (const worker of started) {
      ctx.state.peakRss.push({ scenario: memoryOf, process: 'serve --role worker', mib: (await worker.peakRssMiB()) ?? Number.NaN });
      await recordServerMemory(ctx, memoryOf, worker);
    }
  }
  await Promise.all(started.map((worker) => worker.stop()));
  return run;
}

/**
 * 4: delivery throughput, against raw undici POSTs of the same signed body to the same receivers;
 * then, in the same run, the graphile-worker peer on the same database and receivers, and Plaza
 * again with 2 and 4 worker processes on new databases of the same events.
 */
export const deliveryThroughput: Scenario = {
  id: '4',
  name: 'delivery throughput',
  run: (ctx) =>
    withCleanup(async (onExit) => {
      const { engine, scale } = ctx;
      const receivers = await Receivers.start(WEBHOOKS);
      onExit(() => receivers.stop());
      const expected = scale.events * WEBHOOKS;
      const first = await fillOutbox(ctx, receivers, onExit, '4');
      const run = await deliverOutbox(ctx, first, receivers, 1, expected, onExit, '4');
      ctx.state.deliveriesPerSecond = run.perSecond;

      progress('ceiling: raw undici Pool POSTs');
      await receivers.reset();
      await runHelper('post-ceiling', 'run', { urls: receivers.urls, perReceiver: IN_FLIGHT_PER_RECEIVER, total: expected, marketplace: MARKETPLACE, sellerId: SELLER_ID });
      const ceiling = await receivers.waitFor(expected, { stallMs: scale.stallMs });

      // Right after Plaza's run, on its database (the API, idle, still runs it on the embedded way):
      // the same events' bodies, as jobs in graphile-worker's own schema.
      const peer = await runGraphileWorkerPeer(ctx, first.db, receivers, {
        events: scale.events,
        marketplace: MARKETPLACE,
        sellerId: SELLER_ID,
        concurrency: PLAZA.DELIVERY_CONCURRENCY,
        perReceiver: IN_FLIGHT_PER_RECEIVER,
      });
      await first.api.stop();

      const fleets: { workers: number; run: DeliveryRun }[] = [];
      for (const workers of FLEETS) {
        const outbox = await fillOutbox(ctx, receivers, onExit);
        fleets.push({ workers, run: await deliverOutbox(ctx, outbox, receivers, workers, expected, onExit) });
        await outbox.api.stop();
      }

      const ratio = run.perSecond / ceiling.perSecond;
      // One engine: the embedded server is PostgreSQL too, so one target.
      const target = 0.4;
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
        ...intakeRows('4', engine, first, scale.events),
        cpuRow('1 worker', engine, run),
        ...peerRows(engine, run, peer),
        ...fleets.flatMap(({ workers, run: fleet }) => fleetRows(engine, workers, fleet, run)),
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
      const receivers = await Receivers.start(WEBHOOKS, { hanging: [WEBHOOKS - 1] });
      onExit(() => receivers.stop());
      const outbox = await fillOutbox(ctx, receivers, onExit, '7');
      const run = await deliverOutbox(ctx, outbox, receivers, 1, ctx.scale.events * (WEBHOOKS - 1), onExit, '7');
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

/**
 * 12: scenario 4's first row with publication updates instead of order creations: each event is a
 * revision of one of events/10 publications, sent without `changes`, so that the intake replaces
 * the publication's snapshot and computes the changes (issue 31). Its figures are for an A/B against
 * a build without snapshots (BENCH_SERVICE_MAIN, bench/README.md): within 10 % is the aim.
 */
export const publicationUpdates: Scenario = {
  id: '12',
  name: 'publication updates',
  run: (ctx) =>
    withCleanup(async (onExit) => {
      const receivers = await Receivers.start(WEBHOOKS);
      onExit(() => receivers.stop());
      const expected = ctx.scale.events * WEBHOOKS;
      const outbox = await fillOutbox(ctx, receivers, onExit, undefined, 'publication-updates');
      const run = await deliverOutbox(ctx, outbox, receivers, 1, expected, onExit);
      await outbox.api.stop();
      return [
        ...intakeRows(`12 publication updates (${ctx.scale.events} events, ${REVISIONS} revisions each)`, ctx.engine, outbox, ctx.scale.events),
        { scenario: `12 publication updates, delivery (${howMany(run)} in ${seconds(run.spanMs)})`, database: ctx.engine, figure: perSecond(run.perSecond), ceiling: '—', ratio: '—', target: '—', met: 'n/a' },
        cpuRow('1 worker', ctx.engine, run, '12'),
      ];
    }),
};
