import { randomBytes } from 'node:crypto';
import { Pool } from 'undici';
import { signatureHeader } from '../../src/delivery/dispatch/signature.js';
import { buildNotification } from '../../src/events/envelope.js';
import type { EventBody } from '../../src/events/event-schema.js';
import { serveRequests } from '../lib/ipc.js';
import { orderEvent } from '../lib/payloads.js';

/**
 * Ceiling of scenarios 4 and 7: what raw undici Pools do against the same receivers, with the
 * body the service would send, signed per message (Standard Webhooks headers) as the worker does,
 * and the same parallelism (DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK requests per receiver).
 */
serveRequests({
  run: async (job: { urls: string[]; perReceiver: number; total: number; marketplace: string; sellerId: number }) => {
    const key = randomBytes(24);
    const body = JSON.stringify(buildNotification(orderEvent(job.sellerId, 'ceiling') as unknown as EventBody, job.marketplace));
    const pools = job.urls.map((url) => new Pool(url, { connections: job.perReceiver, pipelining: 1 }));
    let sent = 0;
    const failures: string[] = [];
    const started = performance.now();
    await Promise.all(
      pools.flatMap((pool) =>
        Array.from({ length: job.perReceiver }, async () => {
          while (sent < job.total && failures.length === 0) {
            const id = `msg_ceiling_${sent++}`;
            const timestamp = Math.floor(Date.now() / 1000);
            const { statusCode, body: answer } = await pool.request({
              method: 'POST',
              path: '/',
              headers: {
                'content-type': 'application/json',
                'webhook-id': id,
                'webhook-timestamp': String(timestamp),
                'webhook-signature': signatureHeader([key], id, timestamp, body),
              },
              body,
            });
            await answer.dump();
            if (statusCode !== 200) failures.push(`${id}: ${statusCode}`);
          }
        }),
      ),
    );
    await Promise.all(pools.map((pool) => pool.close()));
    if (failures.length > 0) throw new Error(`ceiling POST failed: ${failures[0]}`);
    return { elapsedMs: performance.now() - started };
  },
});
