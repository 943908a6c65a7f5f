import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import { packageVersion } from '../../paths.js';
import { isReservedHeader } from '../../webhooks/reserved-headers.js';
import { signatureHeader } from './signature.js';

export const RESPONSE_BODY_LIMIT = 4096;

export const USER_AGENT = `Plaza/${packageVersion}`;

export interface Notification {
  url: string;
  messageId: string;
  body: string;
  /** The plaza-entity-sequence header (issue 30); not covered by the signature. */
  sequence?: number;
  /** HMAC keys: the current secret, plus the previous one during a rotation. */
  keys: readonly Buffer[];
  headers: Record<string, string>;
  timestampSeconds: number;
  /**
   * A W3C traceparent for the receiver (the webhook's send_traceparent, with traces exported): sent
   * as the `traceparent` header, in place of one among the webhook's own headers; not signed.
   */
  traceparent?: string;
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

/** The notification's position among its webhook's notifications of the same entity, from 1 (docs/webhooks.md). */
export const ENTITY_SEQUENCE_HEADER = 'plaza-entity-sequence';

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
  if (notification.sequence !== undefined) headers[ENTITY_SEQUENCE_HEADER] = String(notification.sequence);
  if (notification.traceparent !== undefined) headers.traceparent = notification.traceparent;
  return headers;
}

/**
 * One POST of a notification. Never throws: every way a send can go wrong becomes a result that
 * the caller records as an attempt. Redirects are not followed (undici's dispatch does not follow
 * them), so a 3xx is just a status that is not 2xx. The whole exchange, connect included, is bounded
 * by timeoutMs; `signal` lets shutdown abort it.
 *
 * Through the dispatcher's handler interface rather than undici's request(): request() wraps every
 * answer in a Readable stream and an AbortSignal with its listeners, read back through an async
 * iterator, which was a fifth of the worker's JavaScript time in scenario 4 for an answer whose
 * first 4 KiB are all we keep.
 */
export function sendNotification(dispatcher: Dispatcher, notification: Notification, timeoutMs: number, signal?: AbortSignal): Promise<SendResult> {
  const started = performance.now();
  let url: URL;
  try {
    url = new URL(notification.url);
  } catch {
    return Promise.resolve(failed(started, 'invalid callback URL', null));
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return Promise.resolve(failed(started, `unsupported URL scheme ${url.protocol}`, null));
  return new Promise((resolve) => {
    // In here, a throw of our own (headers that cannot be built) rejects rather than throws.
    const requestHeaders = notificationHeaders(notification);
    const exchange = new Exchange(started, requestHeaders, timeoutMs, signal, resolve);
    if (signal?.aborted) return exchange.stop('aborted: worker shutting down');
    dispatcher.dispatch({ origin: url.origin, path: `${url.pathname}${url.search}`, method: 'POST', headers: requestHeaders, body: notification.body }, exchange);
  });
}

function failed(started: number, error: string, requestHeaders: Record<string, string> | null, detail?: string): SendResult {
  return { statusCode: null, error, ...(detail === undefined ? {} : { detail }), responseBody: null, retryAfter: undefined, durationMs: Math.round(performance.now() - started), requestHeaders };
}

/**
 * One request's handler: keeps the status, Retry-After and the first RESPONSE_BODY_LIMIT bytes of
 * the answer, and settles once, with the answer or the reason there is none. A timer bounds the
 * whole exchange; the request is aborted when it fires, when shutdown aborts `signal`, or once the
 * kept prefix is full (the rest of a large answer is not read).
 *
 * undici 7's dispatch-handler API (onRequestStart … onResponseError, with the request's controller),
 * not the callbacks before it (onConnect, onHeaders, onData, onComplete, onError), which undici 7
 * keeps as deprecated and its next major drops.
 */
class Exchange implements Dispatcher.DispatchHandler {
  /** The request's controller, once it is given a connection. */
  private controller: Dispatcher.DispatchController | undefined;
  /** Why this side ended the exchange, once it did: the request is aborted as soon as it can be. */
  private stoppedWith: string | undefined;
  private settled = false;
  /** The answer ended (its last byte parsed). */
  private complete = false;
  private statusCode = 0;
  private retryAfter: string | undefined;
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private readonly timer: NodeJS.Timeout;
  private readonly onShutdown = () => this.stop('aborted: worker shutting down');

  constructor(
    private readonly started: number,
    private readonly requestHeaders: Record<string, string>,
    timeoutMs: number,
    private readonly signal: AbortSignal | undefined,
    private readonly resolve: (result: SendResult) => void,
  ) {
    this.timer = setTimeout(() => this.stop(`timeout after ${timeoutMs} ms`), timeoutMs);
    signal?.addEventListener('abort', this.onShutdown, { once: true });
  }

  /**
   * Ends the exchange from this side (a timeout, shutdown): with no answer, `reason`; once the
   * status came, with that answer and what came of its body (see onResponseError).
   */
  stop(reason: string): void {
    if (this.settled) return;
    this.stoppedWith = reason;
    // Settled first: the abort calls onResponseError at once, whose error only repeats the reason.
    if (this.statusCode !== 0) this.answered();
    else this.settle(failed(this.started, reason, this.requestHeaders));
    this.controller?.abort(new Error(reason));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    // Called when the request is given a connection: a stop before that aborts it now.
    if (this.stoppedWith !== undefined) controller.abort(new Error(this.stoppedWith));
    else this.controller = controller;
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    if (statusCode < 200) return; // 1xx: the answer is still to come.
    this.statusCode = statusCode;
    // The first one, should the receiver send several.
    const retryAfter = headers['retry-after'];
    this.retryAfter = Array.isArray(retryAfter) ? retryAfter[0] : retryAfter;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return; // Past the kept prefix, or stopped: the rest is not kept.
    const room = RESPONSE_BODY_LIMIT - this.size;
    this.chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
    this.size += Math.min(chunk.length, room);
    if (this.size >= RESPONSE_BODY_LIMIT) {
      this.answered();
      // A long answer is not read to its end; but one whose end is in the same read of the socket
      // (parsed before this microtask runs) is not aborted: that would close a connection the pool
      // reuses, and undici then opens a second one for the aborted request and drops it unused.
      queueMicrotask(() => {
        if (!this.complete) this.controller?.abort(new Error('response body limit reached'));
      });
    }
  }

  onResponseEnd(): void {
    this.complete = true;
    this.answered();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.settled) return;
    // The status is the receiver's answer: "2xx within the timeout" is a success even when the body
    // behind it trickles or breaks off (recorded as far as it came). Counted as a failure, it was
    // sent again to a receiver that had taken it.
    if (this.statusCode !== 0) return this.answered();
    this.settle(failed(this.started, describeError(error), this.requestHeaders, error.message));
  }

  private answered(): void {
    this.settle({
      statusCode: this.statusCode,
      error: null,
      responseBody: Buffer.concat(this.chunks, this.size).toString('utf8'),
      retryAfter: this.retryAfter,
      durationMs: Math.round(performance.now() - this.started),
      requestHeaders: this.requestHeaders,
    });
  }

  private settle(result: SendResult): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.signal?.removeEventListener('abort', this.onShutdown);
    this.resolve(result);
  }
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
  // undici asserts that a 101 names its Upgrade: a receiver's answer, not an error of ours.
  if (code === 'ERR_ASSERTION') return 'invalid response from the receiver';
  if (code) return `connection error ${code}`;
  return error.message.slice(0, 200) || 'request failed';
}
