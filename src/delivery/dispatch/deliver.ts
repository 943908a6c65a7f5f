import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import type { Agent } from 'undici';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { Database } from '../../db/database.js';
import type { Keys } from '../../keys.js';
import { parseNetworks } from '../../net/address-policy.js';
import { decryptSecret, secretKeyBytes } from '../../keys/secret-box.js';
import { openHeaders } from '../../keys/header-box.js';
import { claimDueDeliveries, type Claim, type ClaimPosition } from '../queue/claim.js';
import { recoverExpiredLeases } from '../queue/recover-expired-leases.js';
import type { ClaimedDelivery } from '../queue/take-rows.js';
import type { AttemptOutcome } from '../queue/complete.js';
import { CompletionBatcher } from './completion-batcher.js';
import { clockOffsetMs } from '../../db/database-clock.js';
import type { Metrics } from '../../metrics.js';
import { nextRetryDelay, parseRetryAfter, parseRetrySchedule } from './retry-schedule.js';
import { sendNotification, type SendResult } from './sender.js';
import { createGuardedAgent, type Resolve } from './ssrf-guard.js';
import { DestinationAddresses } from './destination-addresses.js';
import { createSendBudgets, type SendBudgets } from './send-budgets.js';
import { postponeClaim } from '../queue/postpone-claim.js';
import { recordedHeaders } from './sent-headers.js';
import { activeTracer, type TraceSpan } from '../../telemetry/tracing.js';
import { endSendSpan, sendSpan, startClaimSpan } from './spans.js';

export interface DelivererDeps {
  config: Config;
  db: Database;
  keys: Keys;
  clock: Clock;
  logger?: FastifyBaseLogger;
  metrics?: Metrics;
  /** Names this worker's leases; unique per process by default. */
  workerId?: string;
  /** The DNS lookup of callback hosts (tests); the system's by default. */
  resolve?: Resolve;
}

/** What one worker needs to send: its id, its guarded HTTP agent and the parsed settings. */
export interface Deliverer {
  readonly deps: DelivererDeps;
  readonly workerId: string;
  readonly agent: Agent;
  readonly schedule: number[];
  /** Bytes per destination address and per tenant (send-budgets.ts); undefined when both are turned off. */
  readonly sendBudgets: SendBudgets | undefined;
  readonly completions: CompletionBatcher;
  /** Where the round-robin over tenants, and the scan over webhooks, resume at the next claim. */
  readonly position: ClaimPosition;
  /** When this worker last turned expired leases back into `pending` (clock milliseconds). */
  leasesRecoveredAt?: number;
  /** Webhook signing keys decrypted, by their stored form (see signingKeys). */
  readonly signingKeyCache: Map<string, Buffer>;
  /** Webhook headers opened, by their stored form (header-box.ts). */
  readonly headersCache: Map<string, Record<string, string>>;
  close(): Promise<void>;
}

export interface DeliveryResult {
  deliveryId: number;
  messageId: string;
  /** `postponed`: the destination or the tenant was over its send budget; nothing was sent or counted as an attempt. */
  outcome: AttemptOutcome['kind'] | 'postponed';
  send: SendResult;
  /** False when the lease was lost meanwhile (another worker took over, or the webhook was deleted). */
  recorded: boolean;
  /** Retried or postponed: due again this many milliseconds after it was recorded. */
  dueAgainInMs?: number;
}

export function newWorkerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

export function createDeliverer(deps: DelivererDeps): Deliverer {
  const { config } = deps;
  const allowed = parseNetworks(config.WEBHOOK_ALLOWED_NETWORKS);
  const addresses = new DestinationAddresses(allowed, deps.resolve);
  const agent = createGuardedAgent({
    allowed,
    connectTimeoutMs: config.DELIVERY_CONNECT_TIMEOUT_MS,
    responseTimeoutMs: config.DELIVERY_TIMEOUT_MS,
    ...(deps.resolve ? { resolve: deps.resolve } : {}),
    onConnect: (hostname, address) => addresses.noteConnected(hostname, address),
  });
  const workerId = deps.workerId ?? newWorkerId();
  const completions = new CompletionBatcher(
    deps.db,
    deps.clock,
    { workerId, disableAfterDays: config.DELIVERY_DISABLE_AFTER_DAYS },
    config.DELIVERY_COMPLETION_BATCH,
  );
  return {
    deps,
    workerId,
    agent,
    schedule: parseRetrySchedule(config.DELIVERY_RETRY_SCHEDULE),
    sendBudgets: createSendBudgets(config, addresses),
    completions,
    position: { webhookCursor: 0, streamCursors: new Map() },
    signingKeyCache: new Map(),
    headersCache: new Map(),
    close: () => agent.close(),
  };
}

/** Most signing keys a worker keeps decrypted (one or two per webhook it sends to); emptied when full. */
const SIGNING_KEY_CACHE_SIZE = 10_000;

/**
 * The HMAC keys a webhook signs with now: its secret, and the previous one until it expires.
 * `cache` (the worker's) keeps them decrypted by their stored form, which a new secret or a new
 * master key changes: an AES-GCM decryption per notification was 8 % of the worker's time in
 * scenario 4. The keys are in the worker's memory while it signs anyway.
 */
export function signingKeys(
  keys: Keys,
  webhook: Pick<ClaimedDelivery, 'secret_encrypted' | 'previous_secret_encrypted' | 'previous_secret_expires_at'>,
  now: Date,
  cache?: Map<string, Buffer>,
): Buffer[] {
  const key = (stored: string) => {
    let bytes = cache?.get(stored);
    if (bytes === undefined) {
      bytes = secretKeyBytes(decryptSecret(keys.webhookSecretsKey, stored));
      if (cache && cache.size >= SIGNING_KEY_CACHE_SIZE) cache.clear();
      cache?.set(stored, bytes);
    }
    return bytes;
  };
  const result = [key(webhook.secret_encrypted)];
  const expires = webhook.previous_secret_expires_at;
  if (webhook.previous_secret_encrypted && expires && new Date(expires).getTime() > now.getTime()) result.push(key(webhook.previous_secret_encrypted));
  return result;
}

/** Claims what is due (up to `limit`), sends it all, records every attempt. For tests and one-shot runs. */
export async function deliverDue(deliverer: Deliverer, limit = deliverer.deps.config.DELIVERY_CONCURRENCY): Promise<DeliveryResult[]> {
  const { deliveries } = await claim(deliverer, limit);
  return Promise.all(deliveries.map((delivery) => deliverClaimed(deliverer, delivery)));
}

/** A lease lasts DELIVERY_LEASE_SECONDS (5 s or more): looking for expired ones every second is enough. */
export const LEASE_RECOVERY_INTERVAL_MS = 1000;

/**
 * Turns expired leases (of crashed workers) back into `pending`, at most once a
 * LEASE_RECOVERY_INTERVAL_MS of the clock; how many it turned.
 */
export async function recoverLeasesWhenDue(deliverer: Deliverer): Promise<number> {
  const { db, clock } = deliverer.deps;
  const now = clock.now().getTime();
  if (deliverer.leasesRecoveredAt !== undefined && now - deliverer.leasesRecoveredAt < LEASE_RECOVERY_INTERVAL_MS) return 0;
  deliverer.leasesRecoveredAt = now;
  return recoverExpiredLeases(db, clockOffsetMs(clock));
}

/** Recovers expired leases when due (recoverLeasesWhenDue), then claims (claimWork). For tests and one-shot runs. */
export async function claim(deliverer: Deliverer, free: number, recording?: ReadonlyMap<number, number>): Promise<Claim> {
  await recoverLeasesWhenDue(deliverer);
  return claimWork(deliverer, free, recording);
}

/**
 * Claims up to `free` due deliveries for this worker (queue/claim.ts). `recording`: per webhook, the
 * worker's sends that are over and wait for their attempt to be recorded (not in flight any more).
 * The running worker recovers expired leases on a timer of its own, off this path.
 */
export async function claimWork(deliverer: Deliverer, free: number, recording?: ReadonlyMap<number, number>): Promise<Claim> {
  const { config, db, clock } = deliverer.deps;
  const tracer = activeTracer();
  const startedAt = tracer.enabled ? Date.now() : 0;
  const claimed = await claimDueDeliveries(db, {
    workerId: deliverer.workerId,
    clockOffsetMs: clockOffsetMs(clock),
    leaseSeconds: config.DELIVERY_LEASE_SECONDS,
    free,
    concurrency: config.DELIVERY_CONCURRENCY,
    perWebhookLimit: config.DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK,
    tenantShare: config.DELIVERY_TENANT_SHARE,
    scanWebhooks: config.DELIVERY_CLAIM_SCAN_WEBHOOKS,
    ...(recording ? { recording } : {}),
    position: deliverer.position,
  });
  // A claim that took nothing (most wakes of an idle worker) makes no span.
  if (tracer.enabled && claimed.deliveries.length > 0) {
    const span = startClaimSpan(tracer, deliverer.workerId, free, claimed.deliveries, startedAt);
    for (const delivery of claimed.deliveries) claimSpans.set(delivery, span);
    span.end();
  }
  return claimed;
}

/** With traces exported, the span of the claim that took each delivery: the parent of its send's span. */
const claimSpans = new WeakMap<ClaimedDelivery, TraceSpan>();

/**
 * Sends one claimed delivery and records the attempt; never throws for a receiver's failure.
 * `onSent` is called once the receiver is done with it (answered, failed or timed out), before the
 * attempt is recorded: from then on it loads no receiver.
 */
export async function deliverClaimed(deliverer: Deliverer, delivery: ClaimedDelivery, signal?: AbortSignal, onSent?: () => void): Promise<DeliveryResult> {
  const { config, clock, keys, metrics, logger } = deliverer.deps;
  const startedAt = clock.now();
  // Where the send is decided: a destination or a tenant over its send budget waits, unsent and uncounted.
  const wait = (await deliverer.sendBudgets?.take(delivery, Buffer.byteLength(delivery.body), startedAt.getTime())) ?? 0;
  if (wait > 0) {
    const recorded = await postponeClaim(deliverer.deps.db, delivery.id, deliverer.workerId, wait, clockOffsetMs(clock));
    logger?.debug({ deliveryId: delivery.id, waitSeconds: wait }, 'destination or tenant over its send budget; delivery postponed');
    const send = { statusCode: null, error: null, responseBody: null, retryAfter: undefined, durationMs: 0, requestHeaders: null };
    return { deliveryId: delivery.id, messageId: delivery.message_id, outcome: 'postponed', send, recorded, ...(recorded ? { dueAgainInMs: wait * 1000 } : {}) };
  }
  const tracer = activeTracer();
  const span = tracer.enabled ? sendSpan(tracer, delivery, claimSpans.get(delivery)) : undefined;
  let send: SendResult;
  try {
    send = await sendNotification(
      deliverer.agent,
      {
        url: delivery.callback_url,
        messageId: delivery.message_id,
        body: delivery.body,
        ...(delivery.sequence === null ? {} : { sequence: Number(delivery.sequence) }),
        keys: signingKeys(keys, delivery, startedAt, deliverer.signingKeyCache),
        headers: openHeaders(keys.webhookSecretsKey, delivery, deliverer.headersCache),
        timestampSeconds: Math.floor(startedAt.getTime() / 1000),
        ...(span && delivery.send_traceparent ? { traceparent: span.traceparent } : {}),
      },
      config.DELIVERY_TIMEOUT_MS,
      signal,
    );
  } catch (error) {
    // Only our side can get here (a secret that does not decrypt): an attempt that failed, logged in full.
    logger?.error({ err: error, deliveryId: delivery.id }, 'cannot prepare a notification');
    send = { statusCode: null, error: 'internal error preparing the notification', responseBody: null, retryAfter: undefined, durationMs: 0, requestHeaders: null };
  }

  onSent?.();
  if (span) endSendSpan(span, send);
  if (send.detail) logger?.info({ deliveryId: delivery.id, webhookId: delivery.webhook_id, error: send.error, detail: send.detail }, 'delivery attempt got no answer');
  const now = clock.now();
  const outcome = decideOutcome(deliverer, delivery.attempts + 1, send, now);
  const { recorded, webhookDisabled } = await deliverer.completions.complete({
    deliveryId: delivery.id,
    webhookId: delivery.webhook_id,
    startedAt,
    durationMs: send.durationMs,
    statusCode: send.statusCode,
    error: attemptError(send),
    responseBody: send.responseBody,
    requestHeaders: recordedHeaders(send.requestHeaders),
    outcome,
    ...(span ? { traceparent: span.traceparent } : {}),
  });
  if (recorded) logAttempt(logger, delivery, send, outcome, webhookDisabled, now);

  metrics?.deliveryAttempts.inc({ outcome: outcome.kind });
  metrics?.attemptDuration.observe({ outcome: outcome.kind }, send.durationMs / 1000);
  if (recorded && outcome.kind !== 'retry') metrics?.deliveriesCompleted.inc({ outcome: outcome.kind === 'succeeded' ? 'succeeded' : 'failed' });
  logger?.debug({ deliveryId: delivery.id, status: send.statusCode, error: send.error, outcome: outcome.kind, recorded }, 'delivery attempt');
  const dueAgain = recorded && outcome.kind === 'retry' ? { dueAgainInMs: outcome.delayMs } : {};
  return { deliveryId: delivery.id, messageId: delivery.message_id, outcome: outcome.kind, send, recorded, ...dueAgain };
}

/** What last_error and the attempt's error say: the transport's reason, or the status that was not 2xx. */
export function attemptError(send: Pick<SendResult, 'statusCode' | 'error'>): string | null {
  if (send.error !== null) return send.error;
  if (send.statusCode !== null && (send.statusCode < 200 || send.statusCode >= 300)) return `HTTP ${send.statusCode}`;
  return null;
}

/**
 * Failures are what an operator looks for, so they log at the default level: a failed attempt at
 * info, a webhook the delivery disabled (410, or failing too long) at warn. Successes stay at debug.
 */
function logAttempt(logger: FastifyBaseLogger | undefined, delivery: ClaimedDelivery, send: SendResult, outcome: AttemptOutcome, disabled: boolean, now: Date): void {
  if (!logger || outcome.kind === 'succeeded') return;
  const fields = { deliveryId: delivery.id, webhookId: delivery.webhook_id, attempt: delivery.attempts + 1, status: send.statusCode, error: send.error, outcome: outcome.kind };
  logger.info(outcome.kind === 'retry' ? { ...fields, nextAttemptAt: new Date(now.getTime() + outcome.delayMs).toISOString() } : fields, 'delivery attempt failed');
  if (outcome.kind === 'gone' && disabled) logger.warn({ webhookId: delivery.webhook_id, deliveryId: delivery.id }, 'webhook disabled: the receiver answered 410 Gone');
  else if (disabled) logger.warn({ webhookId: delivery.webhook_id, deliveryId: delivery.id }, 'webhook disabled: deliveries kept failing');
}

/**
 * 2xx succeeds; 410 fails and disables; anything else retries on the schedule (429/503 after the
 * receiver's Retry-After when it is longer than the schedule's delay) until the schedule is
 * exhausted.
 */
export function decideOutcome(deliverer: Pick<Deliverer, 'deps' | 'schedule'>, attemptNumber: number, send: SendResult, now: Date): AttemptOutcome {
  const { config } = deliverer.deps;
  const status = send.statusCode;
  if (status !== null && status >= 200 && status < 300) return { kind: 'succeeded' };
  if (status === 410) return { kind: 'gone' };
  const scheduled = nextRetryDelay(deliverer.schedule, attemptNumber, config.DELIVERY_RETRY_JITTER);
  if (scheduled === undefined) return { kind: 'failed' };
  let delay = scheduled;
  if (status === 429 || status === 503) {
    const asked = parseRetryAfter(send.retryAfter, now, config.DELIVERY_RETRY_AFTER_MAX_SECONDS);
    // Retry-After is the least a receiver asks to wait: a longer wait honours it too. Never sooner
    // than the schedule: a receiver answering `Retry-After: 0` (or a date gone by, or a few
    // seconds) would otherwise spend every attempt of the schedule within a minute, and the
    // delivery fail for good, on an overload that lasts longer.
    if (asked !== undefined) delay = Math.max(asked, scheduled);
  }
  return { kind: 'retry', delayMs: delay };
}
