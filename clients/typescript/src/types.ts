/**
 * The shapes of the calls this client makes, written from Plaza's OpenAPI document (`GET
 * /openapi.json`, the `LoginResult`, event and problem schemas) and from docs/: a hand-written
 * subset, checked against the served document by test/openapi-contract.test.ts.
 */

/** 200 of `POST /api/v2/auth/login` and `POST /api/v2/auth/refresh`. */
export interface LoginResult {
  token: string;
  refresh_token: string;
  user_id: number;
  user_name: string;
  seller_id: number;
  /** Seconds the access token is valid (ACCESS_TOKEN_TTL_SECONDS, 900). */
  expires_in: number;
  token_type: 'Bearer' | 'DPoP';
}

/** An RFC 9457 problem as Plaza answers every error (`application/problem+json`). */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  /** The stable error code (docs/errors.md): `unauthorized`, `rate_limited`, `validation_failed`, … */
  code?: string;
  errors?: { field: string; message: string }[];
  retry_after?: number;
  mfa_token?: string;
  [member: string]: unknown;
}

/** A status code such as `APRO`: 1–32 characters of A–Z a–z 0–9 _. */
export type StatusCode = string;

interface EventCommon {
  /** The idempotency key (1–200 visible ASCII characters); sendEvent makes one when absent. */
  event_id?: string;
  seller_id: number;
  author: string;
}

export interface OrderEvent extends EventCommon {
  topic: 'order/create' | 'order/update' | 'order/invoice_upload' | 'order/status_change';
  /** The order reference: equals order.reference_order. */
  entity_id: string;
  order: { reference_order: string; [field: string]: unknown };
  state_from?: StatusCode | null;
  /** Required for order/status_change. */
  state_to?: StatusCode;
  marketplace_connection_id?: number;
}

export interface PublicationEvent extends EventCommon {
  topic: 'publication/create' | 'publication/update';
  /** The publication id: equals publication.id. */
  entity_id: number;
  marketplace_connection_id: number;
  publication: { id: number; [field: string]: unknown };
  changes?: Record<string, unknown> | unknown[] | null;
}

/** The body of `POST /v1/{marketplace_code}/events`. */
export type PlazaEvent = OrderEvent | PublicationEvent;

/** 202 of `POST /v1/{marketplace_code}/events` (also the answer to a repeat of the same event). */
export interface EventAccepted {
  event_id: string;
  /** Deliveries created: one per matching webhook. */
  deliveries: number;
  /** True when an update carried the entity exactly as last accepted: nothing was sent (SKIP_UNCHANGED_EVENTS). */
  unchanged?: true;
}

/** The notification body Plaza sends to a webhook (docs/events.md, "The notification body"). */
export interface Notification {
  seller_id: number;
  marketplace_connection_id?: number;
  topic_path: string;
  entity_id: string | number;
  payload: Record<string, unknown>;
}

/** One page of the notification feed: `GET /v1/{marketplace_code}/webhooks/{code}/notifications`. */
export interface FeedPage<Item = FeedItem> {
  items: Item[];
  /** Where the next page starts; persist it to resume. Null or absent: nothing after this page yet. */
  next_cursor: string | null;
}

/** An item of the feed: its fields are the feed's (at least the notification body and its id). */
export interface FeedItem {
  [field: string]: unknown;
}
