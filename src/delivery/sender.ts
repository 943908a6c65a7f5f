import type { Dispatcher } from 'undici';
import { request } from 'undici';
import { packageVersion } from '../paths.js';
import { signatureHeader } from './signature.js';

export const RESPONSE_BODY_LIMIT = 4096;

export const USER_AGENT = `Plaza/${packageVersion}`;

/** Headers a webhook's own headers may not set: the transport's and the signature's own. */
const RESERVED_HEADERS = new Set([
  'host', 'content-length', 'content-type', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'expect', 'te', 'trailer',
  'user-agent', 'webhook-id', 'webhook-timestamp', 'webhook-signature', 'proxy-authorization', 'proxy-connection',
]);

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
  /** Why no status (timeout, refused address, connection error). */
  error: string | null;
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
    if (!RESERVED_HEADERS.has(lower)) headers[lower] = value;
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

  const timeout = AbortSignal.timeout(timeoutMs);
  const abort = signal ? AbortSignal.any([timeout, signal]) : timeout;
  requestHeaders = notificationHeaders(notification);
  try {
    const response = await request(url, {
      dispatcher,
      method: 'POST',
      headers: requestHeaders,
      body: notification.body,
      signal: abort,
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
    if (timeout.aborted) return failure(`timeout after ${timeoutMs} ms`);
    if (signal?.aborted) return failure('aborted: worker shutting down');
    return failure(describeError(error));
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

/** A short, safe reason: our own errors as they are, network errors by code. */
function describeError(error: unknown): string {
  if (!(error instanceof Error)) return 'request failed';
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'PLAZA_BLOCKED_ADDRESS' || code === 'PLAZA_DNS_FAILED') return error.message;
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return 'connect timeout';
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return 'timeout waiting for the response';
  if (code === 'UND_ERR_SOCKET') return 'connection closed by the receiver';
  if (code) return `connection error ${code}`;
  return error.message.slice(0, 200) || 'request failed';
}
