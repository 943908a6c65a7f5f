import type { Dispatcher } from 'undici';
import { request } from 'undici';
import { packageVersion } from '../paths.js';
import { isReservedHeader } from '../webhooks/reserved-headers.js';
import { signatureHeader } from './signature.js';

export const RESPONSE_BODY_LIMIT = 4096;

export const USER_AGENT = `Plaza/${packageVersion}`;

export interface Notification {
  url: string;
  messageId: string;
  body: string;
  /** HMAC keys: the current secret, plus the previous one during a rotation. */
  keys: readonly Buffer[];
  headers: Record<string, string>;
  timestampSeconds: number;
}

export interface SendResult {
  /** The HTTP status, when the receiver answered. */
  statusCode: number | null;
  /** Why no status (timeout, destination_blocked, dns_failure, connection error): shown to the tenant. */
  error: string | null;
  /** The full cause when there is no status, for the server log only: it may name internal addresses. */
  detail?: string;
  /** The first RESPONSE_BODY_LIMIT bytes of the answer, as text. */
  responseBody: string | null;
  retryAfter: string | undefined;
  durationMs: number;
  /** The request headers as sent (null when no request was made: a bad URL). */
  requestHeaders: Record<string, string> | null;
}

export function notificationHeaders(notification: Notification): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(notification.headers)) {
    const lower = name.toLowerCase();
    if (!isReservedHeader(lower)) headers[lower] = value;
  }
  headers['content-type'] = 'application/json';
  headers['user-agent'] = USER_AGENT;
  headers['webhook-id'] = notification.messageId;
  headers['webhook-timestamp'] = String(notification.timestampSeconds);
  headers['webhook-signature'] = signatureHeader(notification.keys, notification.messageId, notification.timestampSeconds, notification.body);
  return headers;
}

/**
 * One POST of a notification. Never throws: every way a send can go wrong becomes a result that
 * the caller records as an attempt. Redirects are not followed (undici's request does not follow
 * them), so a 3xx is just a status that is not 2xx. The whole exchange, connect included, is bounded
 * by timeoutMs; `signal` lets shutdown abort it.
 */
export async function sendNotification(dispatcher: Dispatcher, notification: Notification, timeoutMs: number, signal?: AbortSignal): Promise<SendResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let requestHeaders: Record<string, string> | null = null;
  const failure = (error: string): SendResult => ({ statusCode: null, error, responseBody: null, retryAfter: undefined, durationMs: elapsed(), requestHeaders });

  let url: URL;
  try {
    url = new URL(notification.url);
  } catch {
    return failure('invalid callback URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return failure(`unsupported URL scheme ${url.protocol}`);

  // One controller and one timer per send: AbortSignal.timeout + AbortSignal.any allocate more and,
  // on Node 20, keep every combined signal alive as long as the long-lived shutdown signal is (the
  // worker's memory grew with each delivery).
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  const onShutdown = () => controller.abort();
  signal?.addEventListener('abort', onShutdown, { once: true });
  requestHeaders = notificationHeaders(notification);
  try {
    const response = await request(url, {
      dispatcher,
      method: 'POST',
      headers: requestHeaders,
      body: notification.body,
      signal: controller.signal,
    });
    const responseBody = await readPrefix(response.body, RESPONSE_BODY_LIMIT);
    const retryAfter = response.headers['retry-after'];
    return {
      statusCode: response.statusCode,
      error: null,
      responseBody,
      retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
      durationMs: elapsed(),
      requestHeaders,
    };
  } catch (error) {
    if (timedOut) return failure(`timeout after ${timeoutMs} ms`);
    if (signal?.aborted) return failure('aborted: worker shutting down');
    return { ...failure(describeError(error)), detail: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onShutdown);
  }
}

async function readPrefix(body: Dispatcher.ResponseData['body'], limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = chunk as Buffer;
    chunks.push(buffer.subarray(0, limit - size));
    size += Math.min(buffer.length, limit - size);
    if (size >= limit) break;
  }
  // Leaving the loop early destroys the stream: the rest of a large answer is not read.
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * A short reason a tenant may read. The SSRF guard's refusals become bare codes: their messages
 * name the addresses a host resolved to and their ranges, which would map the internal network
 * for anyone who can set a callback URL. The message goes to the server log (SendResult.detail).
 */
function describeError(error: unknown): string {
  if (!(error instanceof Error)) return 'request failed';
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'PLAZA_BLOCKED_ADDRESS') return 'destination_blocked';
  if (code === 'PLAZA_DNS_FAILED') return 'dns_failure';
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return 'connect timeout';
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return 'timeout waiting for the response';
  if (code === 'UND_ERR_SOCKET') return 'connection closed by the receiver';
  if (code) return `connection error ${code}`;
  return error.message.slice(0, 200) || 'request failed';
}
