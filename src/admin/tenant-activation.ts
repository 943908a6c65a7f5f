import type { Queryable } from '../db/database.js';
import { notifyDeliveryWorkers, releaseHeldDeliveries } from '../webhooks/deliveries.repository.js';
import type { WebhookRow } from '../webhooks/webhook-access.js';
import { recordWebhookHistory, type WebhookActor } from '../webhooks/webhook-history.js';

export type TenantKind = 'marketplace' | 'seller';

/** Why a webhook is paused by its tenant's deactivation (docs/webhooks.md lists the codes). */
export const TENANT_DEACTIVATED = 'tenant_deactivated';

const ACTIVE_CHANGE = (active: boolean) => ({ field: 'active', before: !active, after: active });

export interface ActivationEffects {
  /** Refresh tokens revoked (deactivation only). */
  revoked_tokens: number;
  /** Webhooks paused (deactivation) or resumed (activation). */
  webhooks: number;
}

/** The users a tenant's deactivation concerns: those whose role acts for it (never admins). */
function usersOf(kind: TenantKind): string {
  return kind === 'marketplace'
    ? `SELECT id FROM users WHERE role = 'marketplace' AND marketplace_code = $1::text`
    : `SELECT id FROM users WHERE role = 'seller' AND seller_id = $1::text::int`;
}

/**
 * Portal sessions opened by a link (no API session to revoke) that act for the tenant or inside it:
 * for a seller, those scoped to it, whoever made the link (the session acts as its maker,
 * src/portal/portal-access.ts); for a marketplace, every link session confined to it (its own
 * and its sellers'). That includes every link its users made: a link is always inside the
 * marketplace of its maker, and only marketplace users and admins make links.
 */
function linkSessionsOf(kind: TenantKind): string {
  return kind === 'marketplace'
    ? `auth_session_id IS NULL AND scope_marketplace = $1::text`
    : `auth_session_id IS NULL AND scope_seller = $1::text::int`;
}

/** Portal links not used yet for the tenant or inside it (so, as above, every one its users made). */
function unusedLinksOf(kind: TenantKind): string {
  return kind === 'marketplace' ? `used_at IS NULL AND marketplace_code = $1::text` : `used_at IS NULL AND seller_id = $1::text::int`;
}

/**
 * What a tenant's deactivation or activation does besides its flag, inside the caller's
 * transaction (the flag, this and the audit row commit together).
 *
 * Deactivation revokes every session and refresh token of the tenant's users (reason
 * `tenant_deactivated`) and deletes the portal sessions opened by links for it or inside it, and
 * its unused links, so that activating the tenant again does not revive them; and pauses the
 * tenant's own active webhooks with reason `tenant_deactivated`: their pending deliveries and
 * retries wait (the claim takes only active webhooks' work), what matches meanwhile is held.
 * Activation resumes exactly those webhooks (a webhook its owner paused, or the delivery disabled,
 * stays as it was) and releases their held deliveries, in order, as a resume does.
 * Access tokens and API keys need nothing here: they are checked against the flag on every request.
 * Each webhook paused or resumed gets its history row, by `actor` (the admin API's caller or the CLI),
 * at the database's time (the CLI has no injected clock to follow).
 */
export async function applyTenantActivation(tx: Queryable, kind: TenantKind, key: string, active: boolean, now: Date, actor: WebhookActor): Promise<ActivationEffects> {
  if (!active) {
    const { rows } = await tx.query<{ tokens: number }>(
      `WITH tokens AS (
         UPDATE refresh_tokens SET revoked_at = $2, revoked_reason = 'tenant_deactivated'
          WHERE revoked_at IS NULL AND user_id IN (${usersOf(kind)})
          RETURNING 1
       ), sessions AS (
         UPDATE sessions SET revoked_at = $2 WHERE revoked_at IS NULL AND user_id IN (${usersOf(kind)}) RETURNING 1
       ), link_sessions AS (
         DELETE FROM portal_sessions WHERE ${linkSessionsOf(kind)}
       ), links AS (
         DELETE FROM portal_links WHERE ${unusedLinksOf(kind)}
       )
       SELECT (SELECT count(*) FROM tokens)::int AS tokens`,
      [key, now],
    );
    const paused = await tx.query<WebhookRow>(
      `UPDATE webhooks SET active = false, disabled_reason = $3, disabled_at = $4, updated_at = $4
        WHERE tenant_kind = $1 AND tenant_id = $2 AND active
        RETURNING id, tenant_kind, tenant_id, marketplace_code, code`,
      [kind, key, TENANT_DEACTIVATED, now],
    );
    for (const webhook of paused.rows) {
      await recordWebhookHistory(tx, webhook, actor, { action: 'pause', changes: [ACTIVE_CHANGE(false)], detail: { disabled_reason: TENANT_DEACTIVATED } });
    }
    return { revoked_tokens: rows[0]?.tokens ?? 0, webhooks: paused.rowCount };
  }
  // Locked first, as a resume does (webhooks.service.ts): an event being fanned out (FOR KEY SHARE
  // on the webhook) either commits its held delivery before the release below, or waits and sees
  // the webhook active.
  const { rows } = await tx.query<WebhookRow>(
    `SELECT id, tenant_kind, tenant_id, marketplace_code, code FROM webhooks
      WHERE tenant_kind = $1 AND tenant_id = $2 AND NOT active AND disabled_reason = $3 ORDER BY id FOR UPDATE`,
    [kind, key, TENANT_DEACTIVATED],
  );
  if (rows.length === 0) return { revoked_tokens: 0, webhooks: 0 };
  const ids = rows.map((row) => row.id);
  await tx.query(
    `UPDATE webhooks SET active = true, disabled_reason = NULL, disabled_at = NULL, failing_since = NULL, updated_at = $2 WHERE id = ANY($1::bigint[])`,
    [ids, now],
  );
  for (const id of ids) await releaseHeldDeliveries(tx, id, now);
  for (const webhook of rows) {
    await recordWebhookHistory(tx, webhook, actor, { action: 'resume', changes: [ACTIVE_CHANGE(true)], detail: { disabled_reason: TENANT_DEACTIVATED } });
  }
  // Pending deliveries waited too: wake the workers whether or not anything was held.
  await notifyDeliveryWorkers(tx);
  return { revoked_tokens: 0, webhooks: ids.length };
}
