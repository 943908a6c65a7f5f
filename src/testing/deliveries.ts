import { randomBytes } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Queryable } from '../db/database.js';
import type { Keys } from '../keys.js';
import { seedMarketplace } from './fixtures.js';
import { encryptSecret, newWebhookSecret } from '../keys/secret-box.js';
import { clockOffsetMs, dbNow } from '../db/database-clock.js';

/** Test helpers of the delivery tests: rows inserted with SQL (the receiver is ./receiver.ts). */

export interface SeededWebhook {
  id: number;
  secret: string;
  code: string;
  marketplaceCode: string;
}

let sequence = 0;

export async function seedWebhook(
  db: Queryable,
  keys: Keys,
  options: {
    callbackUrl: string; marketplaceCode?: string; headers?: Record<string, string>; previousSecret?: string; previousExpiresAt?: Date; code?: string;
    /** The owner (default: the admins) and topic (default publication/update). */
    tenantKind?: 'admin' | 'seller' | 'marketplace'; tenantId?: string; topic?: string;
  },
): Promise<SeededWebhook> {
  const marketplaceCode = options.marketplaceCode ?? 'mkt';
  await seedMarketplace(db, marketplaceCode);
  const secret = newWebhookSecret();
  const code = options.code ?? `hook${++sequence}`;
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO webhooks (tenant_kind, tenant_id, marketplace_code, code, name, topic, callback_url, headers,
                           secret_encrypted, previous_secret_encrypted, previous_secret_expires_at)
     VALUES ($8, $9, $1, $2, 'test', $10, $3, $4::jsonb, $5, $6, $7) RETURNING id`,
    [
      marketplaceCode, code, options.callbackUrl, JSON.stringify(options.headers ?? {}), encryptSecret(keys.webhookSecretsKey, secret),
      options.previousSecret ? encryptSecret(keys.webhookSecretsKey, options.previousSecret) : null, options.previousExpiresAt ?? null,
      options.tenantKind ?? 'admin', options.tenantId ?? '*', options.topic ?? 'publication/update',
    ],
  );
  return { id: rows[0]!.id, secret, code, marketplaceCode };
}

export interface SeededDelivery {
  id: number;
  messageId: string;
  eventRowId: number;
}

/** An event and its pending delivery, due at `now`, as the intake writes them. */
export async function seedDelivery(
  db: Queryable,
  webhook: SeededWebhook,
  options: { now: Date; entityKey?: string; body?: unknown },
): Promise<SeededDelivery> {
  const entityKey = options.entityKey ?? `entity-${++sequence}`;
  const body = options.body ?? { seller_id: 1, marketplace_connection_id: 1, topic_path: `publication/${webhook.marketplaceCode}/update`, entity_id: 7, payload: { publication: { id: 7 }, changes: null, author: 'test' } };
  const event = await db.query<{ id: number }>(
    `INSERT INTO events (event_id, marketplace_code, topic, seller_id, entity_id, body, delivery_count, request_hash, created_at)
     VALUES ($1, $2, 'publication/update', 1, $3, $4::jsonb, 1, 'x', $5) RETURNING id`,
    [`evt_${randomBytes(8).toString('hex')}`, webhook.marketplaceCode, entityKey, JSON.stringify(body), options.now],
  );
  const messageId = `msg_${randomBytes(12).toString('hex')}`;
  const delivery = await db.query<{ id: number }>(
    // The next number of the entity, as the intake's counter would give it (entity_sequences).
    `INSERT INTO deliveries (event_id, webhook_id, entity_key, message_id, status, next_attempt_at, created_at, updated_at, sequence)
     VALUES ($1, $2, $3, $4, 'pending', $5, $5, $5,
             (SELECT coalesce(max(sequence), 0) + 1 FROM deliveries WHERE webhook_id = $2 AND entity_key = $3)) RETURNING id`,
    [event.rows[0]!.id, webhook.id, entityKey, messageId, options.now],
  );
  return { id: delivery.rows[0]!.id, messageId, eventRowId: event.rows[0]!.id };
}

export interface DeliveryRow {
  status: string;
  attempts: number;
  next_attempt_at: Date;
  last_status_code: number | null;
  last_error: string | null;
  leased_by: string | null;
  completed_at: Date | null;
}

export async function deliveryRow(db: Queryable, id: number): Promise<DeliveryRow> {
  const { rows } = await db.query<DeliveryRow>(`SELECT * FROM deliveries WHERE id = $1`, [id]);
  return rows[0]!;
}

export async function attemptRows(db: Queryable, deliveryId: number) {
  const { rows } = await db.query<{ attempt: number; status_code: number | null; error: string | null; response_body: string | null; duration_ms: number }>(
    `SELECT * FROM delivery_attempts WHERE delivery_id = $1 ORDER BY id`,
    [deliveryId],
  );
  return rows;
}

/**
 * The database's "now" in milliseconds, as the delivery SQL sees it (database-clock.ts): the test
 * clock's time plus the real time that has passed since it was made or last advanced. Compare times
 * the database wrote (next_attempt_at, a disable's updated_at) with this, not with the test clock.
 */
export async function databaseNow(db: Queryable, clock: Clock): Promise<number> {
  const { rows } = await db.query<{ now: Date }>(`SELECT ${dbNow(1)} AS now`, [clockOffsetMs(clock)]);
  return rows[0]!.now.getTime();
}
