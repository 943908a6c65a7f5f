import { Pool } from 'undici';
import { serveRequests } from '../lib/ipc.js';
import { orderEvent, publicationUpdate, type EventRequest } from '../lib/payloads.js';
import { sleep, wallNow } from '../lib/processes.js';

/** Sends events to POST /v1/{mkt}/events from its own process (the load must not share the service's CPU accounting). */
interface Target {
  baseUrl: string;
  token: string;
  marketplace: string;
  sellerId: number;
}

interface Accepted {
  status: number;
  deliveries: number;
  body: string;
}

async function post(pool: Pool, target: Target, reference: string, topic?: EventRequest['topic'], event: object = orderEvent(target.sellerId, reference, topic)): Promise<Accepted> {
  const { statusCode, body } = await pool.request({
    method: 'POST',
    path: `/v1/${target.marketplace}/events`,
    headers: { authorization: `Bearer ${target.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(event),
  });
  const text = await body.text();
  const deliveries = statusCode === 202 ? (JSON.parse(text) as { deliveries: number }).deliveries : -1;
  return { status: statusCode, deliveries, body: text };
}

function failureOf(reference: string, answer: Accepted, expected: number): string | undefined {
  if (answer.status !== 202) return `${reference}: ${answer.status} ${answer.body.slice(0, 300)}`;
  if (answer.deliveries !== expected) return `${reference}: ${answer.deliveries} deliveries instead of ${expected}`;
  return undefined;
}

serveRequests({
  /**
   * As fast as `concurrency` requests at a time allow; every event must be accepted with
   * `expectDeliveries`. `startedAt` is the wall time of the first request (the receivers' clock).
   * Orders `<prefix><i>` by default; with `publications`, event i is revision ⌊i / count⌋ of
   * publication 1 + i mod count (publicationUpdate), so that one publication's revisions are taken
   * in one after the other, `count` events apart.
   */
  preload: async (job: Target & { prefix: string; count: number; concurrency: number; expectDeliveries: number; publications?: { connectionId: number; count: number } }) => {
    const pool = new Pool(job.baseUrl, { connections: job.concurrency });
    const startedAt = wallNow();
    const started = performance.now();
    let next = 0;
    const failures: string[] = [];
    await Promise.all(
      Array.from({ length: job.concurrency }, async () => {
        while (next < job.count && failures.length === 0) {
          const i = next++;
          const reference = `${job.prefix}${i}`;
          const publications = job.publications;
          const event = publications ? publicationUpdate(job.sellerId, publications.connectionId, 1 + (i % publications.count), Math.floor(i / publications.count)) : undefined;
          const failure = failureOf(reference, await post(pool, job, reference, undefined, event), job.expectDeliveries);
          if (failure) failures.push(failure);
        }
      }),
    );
    await pool.close();
    if (failures.length > 0) throw new Error(`event intake failed: ${failures[0]}`);
    return { elapsedMs: performance.now() - started, startedAt };
  },

  /**
   * An open-loop load: event i leaves at start + i / rate whatever the answers do, and the wall
   * time of each 202 is noted per entity (the receivers note arrivals the same way).
   */
  paced: async (job: Target & { prefix: string; rate: number; durationMs: number; expectDeliveries: number }) => {
    const pool = new Pool(job.baseUrl, { connections: 64 });
    const total = Math.round((job.rate * job.durationMs) / 1000);
    const answeredAt: Record<string, number> = {};
    const failures: string[] = [];
    const sends: Promise<void>[] = [];
    const start = performance.now() + 20;
    for (let i = 0; i < total; i++) {
      const wait = start + (i * 1000) / job.rate - performance.now();
      if (wait > 1) await sleep(wait);
      const reference = `${job.prefix}${i}`;
      sends.push(
        post(pool, job, reference).then(
          (answer) => {
            const failure = failureOf(reference, answer, job.expectDeliveries);
            if (failure) failures.push(failure);
            else answeredAt[reference] = wallNow();
          },
          (error: Error) => void failures.push(`${reference}: ${error.message}`),
        ),
      );
    }
    await Promise.all(sends);
    await pool.close();
    if (failures.length > 0) throw new Error(`${failures.length} of ${total} events failed, first: ${failures[0]}`);
    return { answeredAt, sent: total, elapsedMs: performance.now() - start };
  },

  /** One event, timed from request to answer, after a few `order/update` events (no subscriber) warm the path. */
  one: async (job: Target & { reference: string; warmups: number }) => {
    const pool = new Pool(job.baseUrl, { connections: 1 });
    for (let i = 0; i < job.warmups; i++) {
      const answer = await post(pool, job, `${job.reference}-warmup-${i}`, 'order/update');
      if (answer.status !== 202) throw new Error(`event intake failed: ${answer.status} ${answer.body.slice(0, 300)}`);
    }
    const started = performance.now();
    const answer = await post(pool, job, job.reference);
    const ms = performance.now() - started;
    await pool.close();
    if (answer.status !== 202) throw new Error(`event intake failed: ${answer.status} ${answer.body.slice(0, 300)}`);
    return { ms, deliveries: answer.deliveries };
  },
});
