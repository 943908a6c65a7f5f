import { PlazaApiError } from './errors.js';
import type { Problem } from './types.js';

export type Fetch = typeof fetch;
export type Sleep = (ms: number) => Promise<void>;

/** How a retryable request is retried on 429 and 503. */
export interface RetryOptions {
  /** Retries after the first attempt (default 4). 0: none. */
  maxRetries?: number;
  /** Longest wait before one retry (default 60 000 ms); a longer Retry-After ends the retries. */
  maxDelayMs?: number;
  /** The wait when the answer has no Retry-After: this, doubled per retry (default 500 ms). */
  baseDelayMs?: number;
}

export interface HttpOptions {
  baseUrl: string;
  fetch?: Fetch;
  retry?: RetryOptions;
  /** Replaced in tests: how the client waits between retries. */
  sleep?: Sleep;
  /** Sent as user-agent (default `plaza-client-typescript/0.1.0`). */
  userAgent?: string;
}

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
  /** Retry on 429/503 (honouring Retry-After) and on network errors: only for requests that are safe to repeat. */
  retry?: boolean;
}

export interface Answer<T> {
  status: number;
  headers: Headers;
  body: T;
}

const RETRYABLE = new Set([429, 503]);
export const defaultSleep: Sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Retry-After as seconds: a number of seconds or an HTTP date (RFC 9110 §10.2.3). */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

/** The HTTP layer: JSON in and out, problems as PlazaApiError, retries where the caller allows them. */
export class Http {
  readonly baseUrl: string;
  private readonly fetch: Fetch;
  private readonly sleep: Sleep;
  private readonly retry: Required<RetryOptions>;
  private readonly userAgent: string;

  constructor(options: HttpOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.sleep = options.sleep ?? defaultSleep;
    this.retry = { maxRetries: 4, maxDelayMs: 60_000, baseDelayMs: 500, ...options.retry };
    this.userAgent = options.userAgent ?? 'plaza-client-typescript/0.1.0';
  }

  url(path: string, query?: RequestOptions['query']): string {
    const url = new URL(this.baseUrl + path);
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) url.searchParams.set(name, String(value));
    return url.toString();
  }

  /** One request, retried as RequestOptions.retry says; a non-2xx answer throws PlazaApiError. */
  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<Answer<T>> {
    for (let attempt = 0; ; attempt++) {
      const retriesLeft = options.retry ? this.retry.maxRetries - attempt : 0;
      let response: Response;
      try {
        response = await this.fetch(this.url(path, options.query), {
          method,
          headers: { accept: 'application/json', 'user-agent': this.userAgent, ...(options.body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers },
          ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
        });
      } catch (error) {
        // The request may or may not have arrived: repeated only when repeating is safe.
        if (retriesLeft <= 0) throw error;
        await this.sleep(this.backoff(attempt));
        continue;
      }
      const text = await response.text();
      const body = text === '' ? undefined : parseJson(text);
      if (response.ok) return { status: response.status, headers: response.headers, body: body as T };
      const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
      if (retriesLeft > 0 && RETRYABLE.has(response.status)) {
        const delay = retryAfter === undefined ? this.backoff(attempt) : retryAfter * 1000;
        if (delay <= this.retry.maxDelayMs) {
          await this.sleep(delay);
          continue;
        }
      }
      throw new PlazaApiError(response.status, isProblem(body) ? body : undefined, retryAfter);
    }
  }

  private backoff(attempt: number): number {
    return Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** attempt);
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function isProblem(body: unknown): body is Problem {
  return typeof body === 'object' && body !== null && !Array.isArray(body);
}
