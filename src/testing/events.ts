import type { Role } from '../accounts/accounts.repository.js';
import type { Queryable } from '../db/database.js';
import { accessTokenFor, bearer, seedConnection, seedUser } from './fixtures.js';
import type { TestContext } from './test-app.js';

/** Test helpers for events and deliveries: webhooks are written straight to the table. */
export interface WebhookSeed {
  tenantKind?: 'seller' | 'marketplace' | 'admin';
  tenantId?: string;
  marketplaceCode?: string;
  code?: string;
  topic: string;
  sellerId?: string;
  active?: boolean;
}

let webhookCounter = 0;

export async function insertWebhook(db: Queryable, seed: WebhookSeed): Promise<{ id: number; code: string }> {
  const code = seed.code ?? `hook_${++webhookCounter}`;
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO webhooks (tenant_kind, tenant_id, marketplace_code, code, name, topic, callback_url, seller_id, secret_encrypted, active)
     VALUES ($1, $2, $3, $4, $4, $5, 'https://receiver.example/hook', $6, 'v1.test.test.test', $7) RETURNING id`,
    [seed.tenantKind ?? 'admin', seed.tenantId ?? '*', seed.marketplaceCode ?? 'MKT', code, seed.topic, seed.sellerId ?? '*', seed.active ?? true],
  );
  return { id: Number(rows[0]!.id), code };
}

export function publication(id: number, extra: Record<string, unknown> = {}) {
  return {
    id,
    sku: `SKU-${id}`,
    stock: 7,
    active: true,
    revisionStatus: 'PENDING',
    createdAt: '2026-01-01T10:00:00-03:00',
    product: { id: 900 + id, sku: `SKU-${id}`, name: 'Lamp', packages_deprecated: 1, images: [{ name: 'a.jpg', position: 1 }] },
    marketplaceConnection: { id: 1, configName: 'main', seller: { id: 1, name: 'Seller', active: true }, marketplace: { id: 3, codigo: 'MKT', name: 'Market' } },
    publicationOptions: [],
    ...extra,
  };
}

export function order(reference: string, extra: Record<string, unknown> = {}) {
  return {
    id: 77,
    reference_order: reference,
    marketplace_connection: 1,
    status: 'APRO',
    creation_date: '2026-01-02T09:30:00-03:00',
    marketplace: { code: 'MKT', configuration_name: 'main', generic: false },
    products: [{ id: 1, sku: 'SKU-1', quantity: 2, unit_price: 10.5 }],
    invoice: { number: null, url: null, sent_to_marketplace: false },
    ...extra,
  };
}

export interface World {
  connections: Record<string, number>;
  headers: Record<'admin' | 'seller1' | 'seller2' | 'marketplace', { authorization: string }>;
}

/**
 * Marketplaces MKT and OTHER; sellers 1 and 2 sell on MKT, seller 3 only on OTHER.
 * Users: an admin, a seller user of seller 1 and of seller 2, a marketplace user of MKT.
 */
export async function seedWorld(ctx: TestContext): Promise<World> {
  const connections = {
    '1:MKT': await seedConnection(ctx.db, 1, 'MKT'),
    '2:MKT': await seedConnection(ctx.db, 2, 'MKT'),
    '3:OTHER': await seedConnection(ctx.db, 3, 'OTHER'),
    '1:OTHER': await seedConnection(ctx.db, 1, 'OTHER'),
  };
  const tokenOf = async (role: Role, sellerId: number, marketplaceCode?: string) => {
    const user = await seedUser(ctx.db, { role, sellerId, ...(marketplaceCode ? { marketplaceCode } : {}) });
    return bearer(await accessTokenFor(ctx, user));
  };
  return {
    connections,
    headers: {
      admin: await tokenOf('admin', 1),
      seller1: await tokenOf('seller', 1),
      seller2: await tokenOf('seller', 2),
      marketplace: await tokenOf('marketplace', 1, 'MKT'),
    },
  };
}

/** A valid event for each topic, for seller 1 on MKT. */
export function sampleEvent(topic: string, world: World, extra: Record<string, unknown> = {}): Record<string, unknown> {
  if (topic.startsWith('publication/')) {
    return { topic, seller_id: 1, entity_id: 101, marketplace_connection_id: world.connections['1:MKT'], publication: publication(101), author: 'jane@seller.example', ...extra };
  }
  const base: Record<string, unknown> = { topic, seller_id: 1, entity_id: 'ORD-1', order: order('ORD-1'), author: 'system' };
  if (topic === 'order/status_change') base.state_to = 'APRO';
  return { ...base, ...extra };
}

export async function postEvent(ctx: TestContext, headers: { authorization: string }, body: unknown, marketplaceCode = 'MKT') {
  return ctx.app.inject({ method: 'POST', url: `/v1/${marketplaceCode}/events`, headers, payload: body as object });
}

export async function deliveriesOf(db: Queryable, webhookId: number) {
  const { rows } = await db.query<{ id: number; event_id: number; status: string; entity_key: string; message_id: string; attempts: number; next_attempt_at: Date }>(
    `SELECT id, event_id, status, entity_key, message_id, attempts, next_attempt_at FROM deliveries WHERE webhook_id = $1 ORDER BY id`,
    [webhookId],
  );
  return rows;
}
