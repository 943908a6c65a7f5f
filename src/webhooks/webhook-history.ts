import type { Role } from '../accounts/accounts.repository.js';
import type { Actor as AdminActor } from '../accounts/admin-audit.repository.js';
import type { Principal } from '../accounts/principal.js';
import { systemClock, type Clock } from '../clock.js';
import type { Queryable } from '../db/database.js';
import { clockOffsetMs } from '../db/database-clock.js';
import type { WebhookRow } from './webhook-access.js';

/**
 * The webhook history (migrations/001_baseline.sql): one row per change to a webhook, in
 * the transaction of the change. Every channel reaches the same service functions, which take an
 * actor (who, and through what) and write the row themselves: no route can change a webhook
 * without it.
 */
export const HISTORY_ACTIONS = ['create', 'update', 'pause', 'resume', 'rotate_secret', 'delete', 'retry', 'replay', 'test'] as const;
export type HistoryAction = (typeof HISTORY_ACTIONS)[number];
export const HISTORY_CHANNELS = ['api', 'portal', 'portal_link', 'admin_api', 'cli'] as const;
export type HistoryChannel = (typeof HISTORY_CHANNELS)[number];
export const ACTOR_KINDS = ['user', 'api_key', 'portal_link', 'cli'] as const;
export type ActorKind = (typeof ACTOR_KINDS)[number];

/** Who changes a webhook and through what. For a portal link, userId is the link's maker. */
export interface WebhookActor {
  kind: ActorKind;
  channel: HistoryChannel;
  role: Role | null;
  userId: number | null;
  apiKeyId: number | null;
  /** For a portal link's session: which link (portal_links.id). */
  portalLinkId?: number | null;
}

/** A credential on the /v1 API (a user's access token or an API key, of any role). */
export function apiActor(principal: Principal): WebhookActor {
  return credentialActor(principal, 'api');
}

/** A credential on the admin API (/api/v2/admin). */
export function adminApiActor(principal: Principal): WebhookActor {
  return credentialActor(principal, 'admin_api');
}

function credentialActor(principal: Principal, channel: HistoryChannel): WebhookActor {
  return principal.apiKeyId !== undefined
    ? { kind: 'api_key', channel, role: principal.role, userId: null, apiKeyId: principal.apiKeyId }
    : { kind: 'user', channel, role: principal.role, userId: principal.userId, apiKeyId: null };
}

/**
 * A portal session: signed in with a password (the user), or opened by a portal link (only those
 * are confined to one marketplace: portal.routes.ts), whose session acts as the link's user, its
 * maker.
 */
export function portalActor(session: { principal: Principal; scopeMarketplace: string | null; portalLinkId: number | null }): WebhookActor {
  const { principal } = session;
  const userId = principal.apiKeyId === undefined ? principal.userId : null;
  // A link made with an API key acts as the key: the history names the key beside the link.
  const apiKeyId = principal.apiKeyId ?? null;
  return session.scopeMarketplace !== null
    ? { kind: 'portal_link', channel: 'portal_link', role: principal.role, userId, apiKeyId, portalLinkId: session.portalLinkId }
    : { kind: 'user', channel: 'portal', role: principal.role, userId, apiKeyId: null };
}

export const CLI_WEBHOOK_ACTOR: WebhookActor = { kind: 'cli', channel: 'cli', role: null, userId: null, apiKeyId: null };

/** The admin audit's actor (`user:<id>`, `api_key:<id>`, `cli`), shared by the admin API and the CLI. */
export function actorOfAdminAction(actor: AdminActor): WebhookActor {
  const [kind, id] = actor.split(':');
  if (kind === 'user') return { kind: 'user', channel: 'admin_api', role: 'admin', userId: Number(id), apiKeyId: null };
  if (kind === 'api_key') return { kind: 'api_key', channel: 'admin_api', role: 'admin', userId: null, apiKeyId: Number(id) };
  return CLI_WEBHOOK_ACTOR;
}

/** One changed field; values only where they are safe to keep (see safeValues). */
export interface FieldChange {
  field: string;
  before?: string | boolean | string[] | null;
  after?: string | boolean | string[] | null;
}

/**
 * The values a history row may hold of a webhook's fields: never a secret, never a header value
 * (receivers' credentials) and of the callback URL only its origin, since its path or query often
 * is the receiver's credential (Slack- or Discord-style URLs, `?token=`).
 */
function safeValues(webhook: Pick<WebhookRow, 'name' | 'callback_url' | 'seller_id' | 'headers' | 'active'>) {
  return {
    name: webhook.name,
    callback_url: originOf(webhook.callback_url),
    seller_id: webhook.seller_id,
    headers: Object.keys(webhook.headers ?? {}).sort(),
    active: webhook.active,
  };
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(invalid URL)';
  }
}

/** A filter as the history keeps it: its JSON text (key order as stored), null for none. */
function filterText(filter: Record<string, unknown> | null | undefined): string | null {
  return filter === null || filter === undefined ? null : JSON.stringify(filter);
}

/** A created webhook's fields, with their safe values; its filter when it has one. */
export function createdFields(webhook: WebhookRow): FieldChange[] {
  const values = safeValues(webhook);
  return [
    { field: 'code', after: webhook.code },
    { field: 'topic', after: webhook.topic },
    ...Object.entries(values).map(([field, after]) => ({ field, after })),
    // Listed when it is not the default, so that the record of a webhook created as before stays as it was.
    ...(webhook.delivery_mode === 'latest' ? [{ field: 'delivery_mode', after: webhook.delivery_mode }] : []),
    ...(webhook.filter ? [{ field: 'filter', after: filterText(webhook.filter) }] : []),
    ...(webhook.send_traceparent ? [{ field: 'send_traceparent', after: true }] : []),
  ];
}

/**
 * The fields that differ between two states of a webhook. Headers count as changed when any name
 * or value differs, but only the names are kept; the callback URL when the URL differs, even if
 * its origin does not.
 */
export function changedFields(before: WebhookRow, after: WebhookRow): FieldChange[] {
  const from = safeValues(before);
  const to = safeValues(after);
  const changes: FieldChange[] = [];
  if (before.name !== after.name) changes.push({ field: 'name', before: from.name, after: to.name });
  if (before.callback_url !== after.callback_url) changes.push({ field: 'callback_url', before: from.callback_url, after: to.callback_url });
  if (before.seller_id !== after.seller_id) changes.push({ field: 'seller_id', before: from.seller_id, after: to.seller_id });
  if (!sameHeaders(before.headers, after.headers)) changes.push({ field: 'headers', before: from.headers, after: to.headers });
  if (before.active !== after.active) changes.push({ field: 'active', before: from.active, after: to.active });
  if (before.delivery_mode !== after.delivery_mode) changes.push({ field: 'delivery_mode', before: before.delivery_mode, after: after.delivery_mode });
  const [filterBefore, filterAfter] = [filterText(before.filter), filterText(after.filter)];
  if (filterBefore !== filterAfter) changes.push({ field: 'filter', before: filterBefore, after: filterAfter });
  if (before.send_traceparent !== after.send_traceparent) changes.push({ field: 'send_traceparent', before: before.send_traceparent, after: after.send_traceparent });
  return changes;
}

function sameHeaders(a: Record<string, string>, b: Record<string, string>): boolean {
  const keysA = Object.keys(a ?? {});
  const keysB = Object.keys(b ?? {});
  return keysA.length === keysB.length && keysA.every((key) => Object.hasOwn(b, key) && b[key] === a[key]);
}

/** Facts of an action besides fields (never a secret): a retry's delivery, a replay's counts, a test's outcome. */
export interface HistoryDetail {
  delivery_id?: number;
  matched?: number;
  replayed?: number;
  statuses?: string[];
  since?: string;
  until?: string | null;
  topic?: string | null;
  entity_id?: string | null;
  event_id?: string | null;
  success?: boolean;
  status_code?: number | null;
  error?: string | null;
  previous_secret_expires_at?: string;
  disabled_reason?: string;
}

export interface HistoryEntry {
  action: HistoryAction;
  changes?: FieldChange[];
  detail?: HistoryDetail;
}

type Owner = Pick<WebhookRow, 'id' | 'tenant_kind' | 'tenant_id' | 'marketplace_code' | 'code'>;

/**
 * Writes one history row, inside the caller's transaction. Its time is the database's clock, so
 * that the rows of API processes on several hosts are in order; `clock` only moves it by an
 * injected test clock's offset (0 in production: src/db/database-clock.ts). The actor's name
 * is copied from users or api_keys now: the row keeps it after the user or key is gone.
 */
export async function recordWebhookHistory(tx: Queryable, webhook: Owner, actor: WebhookActor, entry: HistoryEntry, clock: Clock = systemClock): Promise<void> {
  await tx.query(
    `INSERT INTO webhook_history (webhook_id, tenant_kind, tenant_id, marketplace_code, webhook_code, action,
                                  actor_kind, actor_role, actor_user_id, actor_api_key_id, actor_name, channel, changes, detail, created_at, actor_portal_link_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::int, $10::int,
             CASE WHEN $10::int IS NOT NULL THEN (SELECT name FROM api_keys WHERE id = $10::int)
                  WHEN $9::int IS NOT NULL THEN (SELECT username FROM users WHERE id = $9::int) END,
             $11, $12::jsonb, $13::jsonb, statement_timestamp() + $14::double precision * interval '1 millisecond', $15::bigint)`,
    [
      webhook.id, webhook.tenant_kind, webhook.tenant_id, webhook.marketplace_code, webhook.code, entry.action,
      actor.kind, actor.role, actor.userId, actor.apiKeyId, actor.channel,
      JSON.stringify(entry.changes ?? []), entry.detail === undefined ? null : JSON.stringify(entry.detail), clockOffsetMs(clock),
      actor.portalLinkId ?? null,
    ],
  );
}
