import { createHmac, timingSafeEqual } from 'node:crypto';

export interface VerifyOptions {
  /**
   * The webhook's signing secret (`whsec_…`), or several: during a rotation, the new and the
   * previous one (Plaza signs with both for WEBHOOK_SECRET_OVERLAP_SECONDS), so a receiver that
   * switches early or late keeps verifying.
   */
  secret: string | readonly string[];
  /** The request's headers (a Headers object, or Node's IncomingHttpHeaders). */
  headers: Headers | Record<string, string | string[] | undefined>;
  /** The raw body, exactly as received: not a re-serialised JSON. */
  body: string | Uint8Array;
  /** How far the timestamp may be from now (default 300 s, Standard Webhooks'). */
  toleranceSeconds?: number;
  /** Now, in milliseconds since the epoch (tests). */
  now?: number;
}

export type VerifyFailure = 'missing_headers' | 'timestamp_too_old' | 'timestamp_too_new' | 'no_matching_signature';

export class WebhookVerificationError extends Error {
  constructor(readonly reason: VerifyFailure, message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

export interface VerifiedNotification<T> {
  /** `webhook-id`: the same on every attempt of one delivery; use it to drop duplicates. */
  id: string;
  /** `webhook-timestamp` as a Date. */
  timestamp: Date;
  /** The parsed body. */
  payload: T;
}

function header(headers: VerifyOptions['headers'], name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const value = (headers as Record<string, string | string[] | undefined>)[name] ?? Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
  return Array.isArray(value) ? value.join(', ') : value;
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

/**
 * Checks a notification as Standard Webhooks says (webhook-id, webhook-timestamp,
 * webhook-signature: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, space-separated when there
 * are several) and returns its parsed body; throws WebhookVerificationError otherwise. Accepts any
 * of the signatures with any of the secrets given. Answer 2xx only after it succeeded.
 */
export function verifyNotification<T = unknown>(options: VerifyOptions): VerifiedNotification<T> {
  const id = header(options.headers, 'webhook-id');
  const timestamp = header(options.headers, 'webhook-timestamp');
  const signatures = header(options.headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('missing_headers', 'webhook-id, webhook-timestamp and webhook-signature are required');
  const seconds = /^\d+$/.test(timestamp) ? Number(timestamp) : NaN;
  const now = Math.floor((options.now ?? Date.now()) / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  if (!(seconds >= now - tolerance)) throw new WebhookVerificationError('timestamp_too_old', `webhook-timestamp ${timestamp} is older than ${tolerance} s (or not a number)`);
  if (seconds > now + tolerance) throw new WebhookVerificationError('timestamp_too_new', `webhook-timestamp ${timestamp} is more than ${tolerance} s ahead`);
  const body = typeof options.body === 'string' ? Buffer.from(options.body, 'utf8') : Buffer.from(options.body);
  const given = signatures
    .split(' ')
    .map((entry) => entry.split(','))
    .filter(([version, value]) => version === 'v1' && value)
    .map(([, value]) => Buffer.from(value!, 'base64'));
  const secrets = typeof options.secret === 'string' ? [options.secret] : options.secret;
  const matches = secrets.some((secret) => {
    const expected = createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.`).update(body).digest();
    return given.some((signature) => signature.length === expected.length && timingSafeEqual(signature, expected));
  });
  if (!matches) throw new WebhookVerificationError('no_matching_signature', 'no signature matches the secret(s) given');
  return { id, timestamp: new Date(seconds * 1000), payload: JSON.parse(body.toString('utf8')) as T };
}

/** Signs like Plaza does (for tests of receivers): the webhook-* headers of `body`. */
export function signNotification(secret: string, id: string, timestampSeconds: number, body: string): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const signature = createHmac('sha256', keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': String(timestampSeconds), 'webhook-signature': `v1,${signature}` };
}
