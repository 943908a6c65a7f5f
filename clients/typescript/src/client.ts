import { randomUUID } from 'node:crypto';
import { NotLoggedInError, PlazaApiError } from './errors.js';
import { NotificationFeed, type FeedOptions } from './feed.js';
import { Http, type Answer, type HttpOptions, type RequestOptions } from './http.js';
import type { PlazaSession } from './session.js';
import type { EventAccepted, FeedItem, FeedPage, PlazaEvent } from './types.js';

export interface ClientOptions extends HttpOptions {
  /** A machine credential (`plz_…`), sent as `Authorization: Bearer plz_…`: no login, no refresh. */
  apiKey?: string;
  /** A user's session (PlazaSession): its access token, refreshed as needed. */
  session?: PlazaSession;
}

const path = (strings: TemplateStringsArray, ...values: (string | number)[]) =>
  strings.reduce((out, part, index) => out + part + (index < values.length ? encodeURIComponent(String(values[index])) : ''), '');

/**
 * Plaza's API with one credential: an API key, or a session. Every call sends it as a bearer; with
 * a session, a 401 refreshes (single-flight) and the call is made once more with the new token.
 */
export class PlazaClient {
  readonly http: Http;
  private readonly apiKey: string | undefined;
  private readonly session: PlazaSession | undefined;

  constructor(options: ClientOptions) {
    if (options.apiKey !== undefined && options.session !== undefined) throw new TypeError('give apiKey or session, not both');
    this.http = new Http(options);
    this.apiKey = options.apiKey;
    this.session = options.session;
  }

  /** Any call of the API, authenticated: for what the typed methods do not cover. */
  async request<T>(method: string, route: string, options: RequestOptions = {}): Promise<Answer<T>> {
    if (this.apiKey !== undefined) return this.http.request<T>(method, route, withBearer(options, this.apiKey));
    if (!this.session) throw new NotLoggedInError();
    const token = await this.session.accessToken();
    try {
      return await this.http.request<T>(method, route, withBearer(options, token));
    } catch (error) {
      if (!(error instanceof PlazaApiError && error.status === 401)) throw error;
      // Expired early (a clock ahead of ours), or its session refreshed elsewhere: once more, fresh.
      const fresh = await this.session.tokenAfterUnauthorized(token);
      return this.http.request<T>(method, route, withBearer(options, fresh));
    }
  }

  /**
   * `POST /v1/{marketplace_code}/events`. The event_id (the idempotency key) is the event's own, or
   * a new UUID, and the same on every retry: a retry after a lost answer is answered from the first
   * event, never stored twice. Retries on 429 and 503 after Retry-After, and on network errors.
   */
  async sendEvent(marketplaceCode: string, event: PlazaEvent, options: { eventId?: string } = {}): Promise<EventAccepted> {
    const body = { ...event, event_id: event.event_id ?? options.eventId ?? randomUUID() };
    const { body: accepted } = await this.request<EventAccepted>('POST', path`/v1/${marketplaceCode}/events`, { body, retry: true });
    return accepted;
  }

  /** One page of the notification feed of a webhook. */
  async notificationPage<Item = FeedItem>(marketplaceCode: string, webhookCode: string, after?: string, limit?: number): Promise<FeedPage<Item>> {
    const { body } = await this.request<FeedPage<Item>>('GET', path`/v1/${marketplaceCode}/webhooks/${webhookCode}/notifications`, { query: { after, limit }, retry: true });
    return { items: body.items, next_cursor: body.next_cursor ?? null };
  }

  /** The notification feed of a webhook as an async iterator, with a cursor to persist (NotificationFeed). */
  notifications<Item = FeedItem>(marketplaceCode: string, webhookCode: string, options: FeedOptions = {}): NotificationFeed<Item> {
    return new NotificationFeed<Item>((after, limit) => this.notificationPage<Item>(marketplaceCode, webhookCode, after, limit), options);
  }
}

function withBearer(options: RequestOptions, token: string): RequestOptions {
  return { ...options, headers: { ...options.headers, authorization: `Bearer ${token}` } };
}
