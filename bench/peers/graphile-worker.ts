import { progress } from '../lib/cleanup.js';
import { processCpuMs } from '../lib/cpu.js';
import { runningDatabaseUrl, type BenchDatabase } from '../lib/database.js';
import { meteredDelivery, type DeliveryRun } from '../lib/delivery-run.js';
import { Helper } from '../lib/ipc.js';
import type { Receivers } from '../lib/receivers.js';
import type { ScenarioContext } from '../lib/scenario.js';

/** The peer's connections say who they are, so that its database CPU is told apart from Plaza's. */
const APPLICATION_NAME = 'plaza-bench-peer';

export interface PeerPlan {
  /** Events, each notified to every receiver (`order-<i>`, the bodies of scenario 4). */
  events: number;
  marketplace: string;
  sellerId: number;
  /** Jobs at once (Plaza's DELIVERY_CONCURRENCY) and requests in flight per receiver (its DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK). */
  concurrency: number;
  perReceiver: number;
}

/**
 * Scenario 4's peer: the graphile-worker sender (graphile-worker-sender.ts) in its own process, on
 * the same database (its own schema) and the same receivers. The jobs are enqueued before its
 * runner starts, as Plaza's outbox is filled before its workers start; then measured as Plaza is.
 */
export async function runGraphileWorkerPeer(ctx: ScenarioContext, db: BenchDatabase, receivers: Receivers, plan: PeerPlan): Promise<DeliveryRun> {
  const peer = await Helper.start('graphile-worker-sender', {}, 'peers');
  try {
    const url = new URL(await runningDatabaseUrl(db));
    url.searchParams.set('application_name', APPLICATION_NAME);
    progress(`peer: enqueueing ${plan.events * receivers.urls.length} graphile-worker jobs`);
    await peer.request('prepare', { url: url.toString(), urls: receivers.urls, perReceiver: plan.perReceiver, events: plan.events, marketplace: plan.marketplace, sellerId: plan.sellerId, prefix: 'order-' });
    progress(`peer: graphile-worker delivering, ${plan.concurrency} jobs at once`);
    const run = await meteredDelivery(ctx, db, receivers, plan.events * receivers.urls.length, {
      applicationName: APPLICATION_NAME,
      start: async () => {
        const fromMs = (await processCpuMs(peer.pid)) ?? Number.NaN;
        await peer.request('start', { concurrency: plan.concurrency });
        return [{ cpuMs: () => processCpuMs(peer.pid), fromMs }];
      },
      isAlive: () => peer.isRunning(),
    });
    const { failedAttempts } = await peer.request<{ failedAttempts: number }>('stop');
    if (failedAttempts > 0) progress(`peer: ${failedAttempts} attempts failed and were retried`);
    return run;
  } finally {
    await peer.stop();
  }
}
