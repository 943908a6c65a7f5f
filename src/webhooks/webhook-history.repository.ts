import type { Queryable } from '../db/database.js';
import { deleteInBatches, PRUNE_BATCH } from '../db/delete-in-batches.js';
import type { TimeIdPosition } from '../http/cursor.js';
import type { ActorKind, FieldChange, HistoryAction, HistoryChannel, HistoryDetail } from './webhook-history.js';
import type { TenantKind } from './webhook-access.js';

export interface HistoryRow {
  id: number;
  webhook_id: number;
  tenant_kind: TenantKind;
  tenant_id: string;
  marketplace_code: string;
  webhook_code: string;
  action: HistoryAction;
  actor_kind: ActorKind;
  actor_role: string | null;
  actor_user_id: number | null;
  actor_api_key_id: number | null;
  actor_name: string | null;
  actor_portal_link_id: string | null;
  channel: HistoryChannel;
  changes: FieldChange[];
  detail: HistoryDetail | null;
  created_at: Date;
  /** created_at in µs since the epoch, as text (the cursor's exact position). */
  created_micros: string;
  /** Only in the admins' read: whether the webhook is gone. */
  webhook_deleted?: boolean;
}

/** One webhook's rows, or every row of a marketplace and webhook code. */
export type HistoryOf = { webhookId: number } | { marketplaceCode: string; code: string };

export type HistoryFilter = HistoryOf & {
  /** Resume after this position (exclusive), newest first. */
  after?: TimeIdPosition;
  limit: number;
};

/**
 * Newest first, by (created_at, id); one row more than the page tells whether there is a next.
 * Either one webhook's rows (its owner: webhook_history_webhook) or every row of a marketplace and
 * code, deleted webhooks' too (the admins: webhook_history_code).
 */
export async function listWebhookHistory(db: Queryable, filter: HistoryFilter): Promise<HistoryRow[]> {
  const params: unknown[] = [];
  const conditions: string[] = [];
  if ('webhookId' in filter) {
    conditions.push(`h.webhook_id = $${params.push(filter.webhookId)}`);
  } else {
    conditions.push(`h.marketplace_code = $${params.push(filter.marketplaceCode)}`, `h.webhook_code = $${params.push(filter.code)}`);
  }
  if (filter.after) {
    conditions.push(`(h.created_at, h.id) < (timestamptz 'epoch' + $${params.push(filter.after.createdMicros)}::bigint * interval '1 microsecond', $${params.push(filter.after.id)}::bigint)`);
  }
  const deleted = 'webhookId' in filter ? '' : ', NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.id = h.webhook_id) AS webhook_deleted';
  const { rows } = await db.query<HistoryRow>(
    `SELECT h.*, (extract(epoch FROM h.created_at) * 1000000)::bigint::text AS created_micros${deleted}
       FROM webhook_history h
      WHERE ${conditions.join(' AND ')}
      ORDER BY h.created_at DESC, h.id DESC
      LIMIT $${params.push(filter.limit + 1)}`,
    params,
  );
  return rows;
}

/** The history is audit: kept as long as the other audit rows (AUTH_AUDIT_RETENTION_DAYS), then pruned in batches. */
export function pruneWebhookHistory(db: Queryable, now: Date, retentionDays: number): Promise<number> {
  const cutoff = new Date(now.getTime() - retentionDays * 86_400_000);
  return deleteInBatches(db, `DELETE FROM webhook_history WHERE id IN (SELECT id FROM webhook_history WHERE created_at < $1 LIMIT ${PRUNE_BATCH})`, cutoff);
}
