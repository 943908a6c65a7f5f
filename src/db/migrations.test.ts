import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createFreshDatabase, type FreshDatabase } from '../../test/support/databases.js';
import { migrate, readMigrations } from './migrate.js';

// Every other test starts from the latest schema: this one puts rows in the schema as an earlier
// release left it and checks what a migration makes of them.
let fresh: FreshDatabase | undefined;
after(() => fresh?.drop());

test('migration 005 gives existing deliveries the per-seller ordering key, and cancelled ones a status that exists', async () => {
  fresh = await createFreshDatabase();
  const { db } = fresh;
  const migrations = readMigrations();
  await migrate(db, migrations.filter((migration) => migration.version < 5));
  await db.query(`INSERT INTO marketplaces (code, name) VALUES ('MKT', 'Market')`);
  await db.query(`INSERT INTO sellers (id, name) VALUES (1, 'One'), (2, 'Two')`);
  const { rows: [webhook] } = await db.query<{ id: number }>(
    `INSERT INTO webhooks (tenant_kind, tenant_id, marketplace_code, code, name, topic, callback_url, secret_encrypted)
     VALUES ('marketplace', 'MKT', 'MKT', 'orders', 'Orders', 'order/create', 'https://r.example.com/h', 'x') RETURNING id`);
  // Two sellers' orders with the same entity id, keyed as the release before kept them: by entity id alone.
  const deliveries: Record<string, number> = {};
  for (const [name, sellerId, status] of [['one', 1, 'pending'], ['two', 2, 'pending'], ['gone', 2, 'cancelled']] as const) {
    const { rows: [event] } = await db.query<{ id: number }>(
      `INSERT INTO events (event_id, marketplace_code, topic, seller_id, entity_id, body, delivery_count, request_hash, created_at)
       VALUES ($1, 'MKT', 'order/create', $2, 'ORD-1', '{}', 1, 'x', now()) RETURNING id`, [`evt-${name}`, sellerId]);
    const { rows: [delivery] } = await db.query<{ id: number }>(
      `INSERT INTO deliveries (event_id, webhook_id, entity_key, message_id, status, next_attempt_at, created_at, updated_at)
       VALUES ($1, $2, 'ORD-1', $3, $4, now(), now(), now()) RETURNING id`, [event!.id, webhook!.id, `msg_${name}`, status]);
    deliveries[name] = delivery!.id;
  }

  await migrate(db, migrations);
  const { rows } = await db.query<{ id: number; entity_key: string; status: string; completed_at: Date | null }>(
    `SELECT id, entity_key, status, completed_at FROM deliveries ORDER BY id`);
  assert.deepEqual(rows.map((row) => [row.id, row.entity_key, row.status]), [
    [deliveries.one, 'MKT:1:ORD-1', 'pending'],
    [deliveries.two, 'MKT:2:ORD-1', 'pending'],
    [deliveries.gone, 'MKT:2:ORD-1', 'failed'],
  ]);
  assert.ok(rows[2]!.completed_at, 'a cancelled delivery becomes a finished one');
  // And the producer's idempotency key: another seller may now use the same event_id.
  await db.query(`INSERT INTO events (event_id, marketplace_code, topic, seller_id, entity_id, body, delivery_count, request_hash, created_at)
                  VALUES ('evt-one', 'MKT', 'order/create', 2, 'ORD-9', '{}', 1, 'x', now())`);
});
