import type { Principal } from '../accounts/principal.js';
import type { Database, Queryable } from '../db/database.js';
import { AppError, notFound, type FieldError } from '../http/errors.js';
import { parseNetworks, type Network } from '../net/address-policy.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Keys } from '../keys.js';
import { notifyDeliveryWorkers, releaseHeldDeliveries } from './deliveries.repository.js';
import { encryptSecret, newWebhookSecret } from '../keys/secret-box.js';
import { sealHeaders, withOpenHeaders } from '../keys/header-box.js';
import { assertMarketplaceAccess, loadWebhookForPrincipal, tenantOf, DELIVERY_MODES, type DeliveryMode, type Tenant, type WebhookRow } from './webhook-access.js';
import { ALL_SELLERS, checkCallbackUrl, checkCode, checkHeaders, checkName, normalizeSellerId, normalizeTopic, type Checked } from './webhook-validators.js';
import { deleteWebhook, insertWebhook, isSellerConnected, rotateWebhookSecret, updateWebhook, type WebhookChanges } from './webhooks.repository.js';
import { changedFields, createdFields, recordWebhookHistory, type WebhookActor } from './webhook-history.js';
import { checkFilter, matchesFilter } from './filter/filter.js';

export interface WebhookSettings {
  secretsKey: Buffer;
  allowedNetworks: readonly Network[];
  limitPerTenant: number;
  secretOverlapSeconds: number;
}

/** The settings of the webhook services, from the config and keys (the API and the portal build the same). */
export function webhookSettings({ config, keys }: { config: Config; keys: Keys }): WebhookSettings {
  return {
    secretsKey: keys.webhookSecretsKey,
    allowedNetworks: parseNetworks(config.WEBHOOK_ALLOWED_NETWORKS),
    limitPerTenant: config.WEBHOOKS_PER_TENANT_LIMIT,
    secretOverlapSeconds: config.WEBHOOK_SECRET_OVERLAP_SECONDS,
  };
}

export interface CreateWebhookInput {
  code: string;
  name: string;
  topic: string;
  callback_url: string;
  seller_id?: string | number;
  headers?: Record<string, string>;
  delivery_mode?: string;
  filter?: Record<string, unknown> | null;
  send_traceparent?: boolean;
}

export interface UpdateWebhookInput {
  name?: string;
  callback_url?: string;
  seller_id?: string | number;
  headers?: Record<string, string>;
  active?: boolean;
  delivery_mode?: string;
  filter?: Record<string, unknown> | null;
  send_traceparent?: boolean;
}

/** Collects one FieldError per bad field, so a client sees every problem at once. */
class FieldChecks {
  readonly errors: FieldError[] = [];
  take<T>(field: string, checked: Checked<T>): T | undefined {
    if (checked.ok) return checked.value;
    this.errors.push({ field, message: checked.message });
    return undefined;
  }
  headers(value: Record<string, string>): Record<string, string> | undefined {
    const checked = checkHeaders(value);
    if (checked.ok) return checked.value;
    for (const problem of checked.problems) {
      this.errors.push({ field: problem.header === undefined ? 'body.headers' : `body.headers.${problem.header}`, message: problem.message });
    }
    return undefined;
  }
  /** delivery_mode: the API's schema refuses another value already; the portal's form sends text. */
  deliveryMode(value: string | undefined): DeliveryMode | undefined {
    if (value === undefined || (DELIVERY_MODES as readonly string[]).includes(value)) return value as DeliveryMode | undefined;
    this.errors.push({ field: 'body.delivery_mode', message: `must be one of ${DELIVERY_MODES.join(', ')}` });
    return undefined;
  }
  /** A filter (null: none), each problem named by its path under `body.filter`. */
  filter(value: Record<string, unknown> | null): Record<string, unknown> | null | undefined {
    if (value === null) return null;
    const problems = checkFilter(value);
    for (const problem of problems) this.errors.push({ field: problem.path === '' ? 'body.filter' : `body.filter.${problem.path}`, message: problem.message });
    return problems.length === 0 ? value : undefined;
  }
  /** The seller id for the webhook's owner (assertSellerIdAllowed): its field's problem joins the others; a refusal (403) is thrown. */
  async sellerIdFor(db: Queryable, principal: Principal, owner: Tenant, marketplaceCode: string, sellerId: string | undefined): Promise<void> {
    if (sellerId === undefined) return;
    try {
      await assertSellerIdAllowed(db, principal, owner, marketplaceCode, sellerId);
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== 'validation_failed') throw error;
      this.errors.push(...(error.options.errors ?? []));
    }
  }
  throwIfAny(): void {
    if (this.errors.length > 0) {
      throw new AppError('validation_failed', this.errors.map((e) => `${e.field}: ${e.message}`).join('; '), { errors: this.errors });
    }
  }
}

/**
 * Whose events a webhook may receive depends on the tenant that owns it, whoever edits it: a
 * seller's webhook only its own seller's (its id or `*`, which for it means its own events); a
 * marketplace's any seller connected to that marketplace; the admins' any seller. A seller user
 * asking for another seller is refused as forbidden (403); other mismatches are invalid values.
 */
async function assertSellerIdAllowed(db: Queryable, principal: Principal, owner: Tenant, marketplaceCode: string, sellerId: string): Promise<void> {
  if (sellerId === ALL_SELLERS) return;
  if (owner.kind === 'seller' && sellerId !== owner.id) {
    if (principal.role === 'seller') {
      throw new AppError('forbidden', 'A seller user may subscribe only to its own seller id or "*".', { errors: [{ field: 'body.seller_id', message: 'must be your own seller id or "*"' }] });
    }
    throw invalidSellerId(`a webhook of seller ${owner.id} may only receive that seller's events ("${owner.id}" or "*")`);
  }
  if (owner.kind === 'marketplace' && !(await isSellerConnected(db, sellerId, marketplaceCode))) {
    throw invalidSellerId(`seller ${sellerId} is not connected to marketplace ${marketplaceCode}`);
  }
}

function invalidSellerId(message: string): AppError {
  return new AppError('validation_failed', `body.seller_id: ${message}`, { errors: [{ field: 'body.seller_id', message }] });
}

export interface CreatedWebhook {
  webhook: WebhookRow;
  secret: string;
}

/**
 * A new webhook's fields, every problem at once (the seller id's for the owner included): the
 * values to store, or one 400 naming each bad field. The portal's form shows them all in one answer.
 */
async function checkedCreateInput(db: Queryable, principal: Principal, marketplaceCode: string, input: CreateWebhookInput, settings: WebhookSettings) {
  await assertMarketplaceAccess(db, principal, marketplaceCode);
  const checks = new FieldChecks();
  const code = checks.take('body.code', checkCode(input.code));
  const name = checks.take('body.name', checkName(input.name));
  const topic = checks.take('body.topic', normalizeTopic(input.topic));
  const callbackUrl = checks.take('body.callback_url', checkCallbackUrl(input.callback_url, settings.allowedNetworks));
  const sellerId = checks.take('body.seller_id', normalizeSellerId(input.seller_id ?? ALL_SELLERS));
  const headers = checks.headers(input.headers ?? {});
  const deliveryMode = checks.deliveryMode(input.delivery_mode);
  const filter = checks.filter(input.filter ?? null);
  const owner = tenantOf(principal);
  await checks.sellerIdFor(db, principal, owner, marketplaceCode, sellerId);
  checks.throwIfAny();
  return { code: code!, name: name!, topic: topic!, callbackUrl: callbackUrl!, sellerId: sellerId!, headers: headers!, deliveryMode, filter: filter!, owner };
}

/** Checks a create's fields as createWebhook does, and stores nothing: the 400 of every problem, or nothing. */
export async function validateWebhookCreate(db: Queryable, principal: Principal, marketplaceCode: string, input: CreateWebhookInput, settings: WebhookSettings): Promise<void> {
  await checkedCreateInput(db, principal, marketplaceCode, input, settings);
}

/** Checks a change's fields as changeWebhook does, and stores nothing: the 400 of every problem, or nothing. */
export async function validateWebhookChange(db: Queryable, principal: Principal, marketplaceCode: string, code: string, input: UpdateWebhookInput, settings: WebhookSettings): Promise<void> {
  await checkedChanges(db, principal, await loadWebhookForPrincipal(db, principal, marketplaceCode, code), marketplaceCode, input, settings);
}

/** A change's fields, every problem at once (the seller id's for the webhook's owner included): the changes to store, or one 400. */
async function checkedChanges(db: Queryable, principal: Principal, current: WebhookRow, marketplaceCode: string, input: UpdateWebhookInput, settings: WebhookSettings): Promise<WebhookChanges> {
  const checks = new FieldChecks();
  const changes: WebhookChanges = {};
  if (input.name !== undefined) changes.name = checks.take('body.name', checkName(input.name));
  if (input.callback_url !== undefined) changes.callbackUrl = checks.take('body.callback_url', checkCallbackUrl(input.callback_url, settings.allowedNetworks));
  if (input.seller_id !== undefined) changes.sellerId = checks.take('body.seller_id', normalizeSellerId(input.seller_id));
  const headers = input.headers === undefined ? undefined : checks.headers(input.headers);
  if (input.active !== undefined) changes.active = input.active;
  if (input.delivery_mode !== undefined) changes.deliveryMode = checks.deliveryMode(input.delivery_mode);
  if (input.filter !== undefined) changes.filter = checks.filter(input.filter);
  if (input.send_traceparent !== undefined) changes.sendTraceparent = input.send_traceparent;
  await checks.sellerIdFor(db, principal, { kind: current.tenant_kind, id: current.tenant_id }, marketplaceCode, changes.sellerId);
  checks.throwIfAny();
  if (headers !== undefined) changes.headersEncrypted = sealHeaders(settings.secretsKey, headers);
  return changes;
}

/**
 * The changes below take the actor (who, through which channel) and write the webhook's history
 * row in their own transaction (webhook-history.ts): a channel cannot change a webhook unrecorded.
 */
export async function createWebhook(db: Database, principal: Principal, marketplaceCode: string, input: CreateWebhookInput, settings: WebhookSettings, clock: Clock, actor: WebhookActor): Promise<CreatedWebhook> {
  const { code, name, topic, callbackUrl, sellerId, headers, deliveryMode, filter, owner } = await checkedCreateInput(db, principal, marketplaceCode, input, settings);

  const secret = newWebhookSecret();
  const now = clock.now();
  const webhook = await db.transaction(async (tx) => {
    const created = await insertWebhook(tx, {
      tenant: owner,
      marketplaceCode,
      code: code,
      name: name,
      topic: topic,
      callbackUrl: callbackUrl,
      sellerId: sellerId,
      headersEncrypted: sealHeaders(settings.secretsKey, headers),
      secretEncrypted: encryptSecret(settings.secretsKey, secret),
      deliveryMode: deliveryMode ?? 'all',
      filter,
      sendTraceparent: input.send_traceparent ?? false,
      now,
    }, settings.limitPerTenant);
    // The headers in clear are the ones just sealed: no need to open them again.
    const opened = { ...created, headers, headers_encrypted: null };
    await recordWebhookHistory(tx, opened, actor, { action: 'create', changes: createdFields(opened) }, clock);
    return opened;
  });
  return { webhook, secret };
}

/** A PATCH; one that sets `active` is recorded as a pause or a resume, with every field it changed. */
export async function changeWebhook(db: Database, principal: Principal, marketplaceCode: string, code: string, input: UpdateWebhookInput, settings: WebhookSettings, clock: Clock, actor: WebhookActor): Promise<WebhookRow> {
  const current = await loadWebhookForPrincipal(db, principal, marketplaceCode, code);
  const changes = await checkedChanges(db, principal, current, marketplaceCode, input, settings);
  const now = clock.now();
  const updated = await db.transaction(async (tx) => {
    // The row is locked first, so that the history's "before" is the state this update replaces.
    // A resume takes FOR UPDATE: an event being fanned out (FOR KEY SHARE on the webhook) either
    // commits its held delivery before this release, or waits and sees the webhook active. Other
    // changes take only the lock their UPDATE takes anyway, which does not wait for fan-outs.
    const lock = changes.active === true ? 'FOR UPDATE' : 'FOR NO KEY UPDATE';
    const { rows: [before] } = await tx.query<WebhookRow>(`SELECT * FROM webhooks WHERE id = $1 ${lock}`, [current.id]);
    if (!before) return undefined;
    const row = await updateWebhook(tx, current.id, changes, now);
    if (!row) return undefined;
    if (changes.active === true) {
      await releaseHeldDeliveries(tx, current.id, now);
      // Also when nothing was held: a disabled webhook's deliveries that were already due wait for a wake too.
      await notifyDeliveryWorkers(tx);
    }
    const action = changes.active === undefined ? 'update' : changes.active ? 'resume' : 'pause';
    const opened = withOpenHeaders(settings.secretsKey, row);
    const changed = changedFields(withOpenHeaders(settings.secretsKey, before), opened);
    // A change that changed nothing (a Save without edits, a pause of a paused webhook) is no history.
    if (changed.length > 0) await recordWebhookHistory(tx, row, actor, { action, changes: changed }, clock);
    return opened;
  });
  if (!updated) throw notFound('The webhook does not exist.');
  return updated;
}

export async function rotateSecret(db: Database, principal: Principal, marketplaceCode: string, code: string, settings: WebhookSettings, clock: Clock, actor: WebhookActor): Promise<{ secret: string; previousExpiresAt: Date }> {
  const current = await loadWebhookForPrincipal(db, principal, marketplaceCode, code);
  const secret = newWebhookSecret();
  const now = clock.now();
  const previousExpiresAt = new Date(now.getTime() + settings.secretOverlapSeconds * 1000);
  const rotated = await db.transaction(async (tx) => {
    const row = await rotateWebhookSecret(tx, current.id, encryptSecret(settings.secretsKey, secret), previousExpiresAt, now);
    // The field's name only: a secret's value never reaches the history.
    if (row) await recordWebhookHistory(tx, row, actor, { action: 'rotate_secret', changes: [{ field: 'secret' }], detail: { previous_secret_expires_at: previousExpiresAt.toISOString() } }, clock);
    return row;
  });
  if (!rotated) throw notFound('The webhook does not exist.');
  return { secret, previousExpiresAt };
}

/** Deletes the webhook and its deliveries; its history stays (no foreign key) for the admins. */
export async function removeWebhook(db: Database, principal: Principal, marketplaceCode: string, code: string, clock: Clock, actor: WebhookActor): Promise<void> {
  const webhook = await loadWebhookForPrincipal(db, principal, marketplaceCode, code);
  const deleted = await db.transaction(async (tx) => {
    if (!(await deleteWebhook(tx, webhook.id))) return false;
    await recordWebhookHistory(tx, webhook, actor, { action: 'delete' }, clock);
    return true;
  });
  if (!deleted) throw notFound('The webhook does not exist.');
}

/**
 * Whether a filter matches a sample notification: for a subscriber writing one. The same access as
 * creating a webhook in the marketplace; an invalid filter is 400 naming its path, as on create.
 */
export async function testFilter(db: Queryable, principal: Principal, marketplaceCode: string, input: { filter: Record<string, unknown>; notification: Record<string, unknown> }): Promise<boolean> {
  await assertMarketplaceAccess(db, principal, marketplaceCode);
  const checks = new FieldChecks();
  const filter = checks.filter(input.filter);
  checks.throwIfAny();
  return matchesFilter(filter!, input.notification);
}
