import { randomBytes } from 'node:crypto';
import { Logger, makeWorkerUtils, run, runMigrations, type Runner, type Task } from 'graphile-worker';
import { Pool } from 'undici';
import { signatureHeader } from '../../src/delivery/dispatch/signature.js';
import { buildNotification } from '../../src/events/envelope.js';
import type { EventBody } from '../../src/events/event-schema.js';
import { serveRequests } from '../lib/ipc.js';
import { orderEvent } from '../lib/payloads.js';

/**
 * The sender a Node team would write instead of running Plaza: a graphile-worker job per
 * notification (its own schema, `graphile_worker`, in the same database), each job signing the body
 * as Plaza signs (Standard Webhooks, with Plaza's own signing function) and POSTing it with undici;
 * a 2xx completes the job, anything else throws and graphile-worker's retry takes over. Its
 * configuration is graphile-worker's defaults (pool of 10 connections, as Plaza's
 * DATABASE_POOL_SIZE) but for the parallelism, which is Plaza's: `concurrency` jobs at once, and at
 * most `perReceiver` requests in flight to one receiver (an undici Pool of that many connections
 * each).
 */
interface Job {
  /** Which webhook: the index of its receiver. */
  webhook: number;
  /** The notification as sent, byte for byte (Plaza too keeps and sends the body as text). */
  body: string;
}

interface Webhook {
  pool: Pool;
  path: string;
  key: Buffer;
}

/** Only errors: Plaza runs with LOG_LEVEL=warn here, and graphile-worker logs every job at info. */
const logger = new Logger(() => (level, message) => {
  if (level === 'error') console.error(`peer graphile-worker: ${message}`);
});

/** Events per addJobs call (each one job per receiver): one statement per 5 000 jobs. */
const ENQUEUE_BATCH = 1000;
/** Plaza's DELIVERY_TIMEOUT_MS default: the time a receiver has to answer. */
const TIMEOUT_MS = 10_000;

let connectionString = '';
let webhooks: Webhook[] = [];
let runner: Runner | undefined;
let failedAttempts = 0;

/** One attempt: the receiver's status. */
async function post(webhook: Webhook, id: string, body: string): Promise<number> {
  const timestamp = Math.floor(Date.now() / 1000);
  const answer = await webhook.pool.request({
    method: 'POST',
    path: webhook.path,
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader([webhook.key], id, timestamp, body),
    },
    body,
  });
  await answer.body.dump();
  return answer.statusCode;
}

const deliver: Task = async (payload, helpers) => {
  const job = payload as Job;
  // Stable across the job's retries, as Plaza's message id is across a delivery's attempts.
  const statusCode = await post(webhooks[job.webhook]!, `msg_${helpers.job.id}`, job.body).catch((error: unknown) => {
    failedAttempts++;
    throw error;
  });
  if (statusCode < 200 || statusCode > 299) {
    failedAttempts++;
    throw new Error(`the receiver answered ${statusCode}`);
  }
};

serveRequests({
  /**
   * Creates graphile-worker's schema and enqueues `events` × the receivers' notifications, event by
   * event as Plaza's intake fans them out, with the bodies scenario 4 sends.
   */
  prepare: async (plan: { url: string; urls: string[]; perReceiver: number; events: number; marketplace: string; sellerId: number; prefix: string }) => {
    connectionString = plan.url;
    webhooks = plan.urls.map((url, i) => ({
      pool: new Pool(url, { connections: plan.perReceiver, pipelining: 1, headersTimeout: TIMEOUT_MS, bodyTimeout: TIMEOUT_MS }),
      path: `/hooks/${i}`,
      key: randomBytes(24),
    }));
    await runMigrations({ connectionString, logger });
    const utils = await makeWorkerUtils({ connectionString, logger });
    try {
      for (let first = 0; first < plan.events; first += ENQUEUE_BATCH) {
        const jobs = [];
        for (let i = first; i < Math.min(plan.events, first + ENQUEUE_BATCH); i++) {
          const body = JSON.stringify(buildNotification(orderEvent(plan.sellerId, `${plan.prefix}${i}`) as unknown as EventBody, plan.marketplace));
          for (let webhook = 0; webhook < webhooks.length; webhook++) jobs.push({ identifier: 'deliver', payload: { webhook, body } satisfies Job });
        }
        await utils.addJobs(jobs);
      }
    } finally {
      await utils.release();
    }
    return { jobs: plan.events * webhooks.length };
  },

  /** Starts the runner: from here on the jobs are worked. */
  start: async (options: { concurrency: number }) => {
    runner = await run({ connectionString, concurrency: options.concurrency, noHandleSignals: true, logger, taskList: { deliver } });
    return {};
  },

  /** Stops the runner (in-flight jobs finish) and the connections to the receivers. */
  stop: async () => {
    await runner?.stop();
    runner = undefined;
    await Promise.all(webhooks.map((webhook) => webhook.pool.close()));
    return { failedAttempts };
  },
});
