import { decodeCursor as decodeListCursor, encodeCursor as encodeListCursor } from '../http/cursor.js';
import type { WebhookRow } from './webhook-access.js';
import { disabledMessage, type DisabledReason } from './disabled-reasons.js';

const iso = (value: Date | null) => (value === null ? null : new Date(value).toISOString());

/** What a client sees of a webhook: never its secrets or tenant; its health and how many deliveries a pause holds. */
export function toWebhookResponse(row: WebhookRow, heldCount = 0) {
  return {
    code: row.code,
    name: row.name,
    topic: row.topic,
    seller_id: row.seller_id,
    callback_url: row.callback_url,
    headers: row.headers,
    filter: row.filter ?? null,
    active: row.active,
    disabled_reason: row.disabled_reason as DisabledReason | null,
    disabled_message: disabledMessage(row.disabled_reason),
    disabled_at: iso(row.disabled_at),
    last_success_at: iso(row.last_success_at),
    failing_since: iso(row.failing_since),
    delivery_mode: row.delivery_mode,
    send_traceparent: row.send_traceparent,
    held_count: heldCount,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}

/** List items leave seller_id out, as the spec's index response does. */
export function toWebhookListItem(row: WebhookRow) {
  return { code: row.code, name: row.name, topic: row.topic, callback_url: row.callback_url, headers: row.headers };
}

/** An opaque position after a row: its code and id (codes repeat across tenants in an admin's list). */
export function encodeCursor(row: Pick<WebhookRow, 'code' | 'id'>): string {
  return encodeListCursor([row.code, Number(row.id)]);
}

/** The position of an encodeCursor; a code that no webhook can have (a NUL, say) is a 400, not an error in SQL. */
export function decodeCursor(cursor: string): { code: string; id: number } {
  const [code, id] = decodeListCursor(cursor, ['code', 'bigint']);
  return { code, id };
}
