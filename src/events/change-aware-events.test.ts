import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { seedConnection } from '../testing/fixtures.js';
import { computeChanges } from './snapshots/entity-diff.js';
import { pruneSnapshots } from './snapshots/snapshots.repository.js';
import { deliveriesOf, insertWebhook, order, postEvent, publication, sampleEvent, seedWorld, type World } from '../testing/events.js';

type Body = { payload: Record<string, unknown> };

async function bodyOf(ctx: TestContext, eventId: string): Promise<Body> {
  const { rows } = await ctx.db.query<{ body: Body | null }>(`SELECT body FROM events WHERE marketplace_code = 'MKT' AND event_id = $1`, [eventId]);
  assert.ok(rows[0]?.body, `event ${eventId} has a stored body`);
  return rows[0]!.body!;
}

describe('computeChanges (pure)', () => {
  test('nested objects field by field with dotted paths, arrays whole, added and removed fields with null', () => {
    const before = { id: 1, stock: 5, product: { price: 10, brand: { name: 'A' }, tags: ['x'] }, gone: 'old', same: [1, 2] };
    const after = { id: 1, stock: 6, product: { price: 10.5, brand: { name: 'B' }, tags: ['x', 'y'] }, same: [1, 2], added: { a: 1 } };
    assert.deepEqual(computeChanges(before, after), [
      { field: 'stock', from: 5, to: 6 },
      { field: 'product.price', from: 10, to: 10.5 },
      { field: 'product.brand.name', from: 'A', to: 'B' },
      { field: 'product.tags', from: ['x'], to: ['x', 'y'] },
      { field: 'added', from: null, to: { a: 1 } },
      { field: 'gone', from: 'old', to: null },
    ]);
  });

  test('key order is ignored; an object replaced by a scalar is one change; an array of objects compares whole', () => {
    assert.deepEqual(computeChanges({ a: { x: 1, y: 2 } }, { a: { y: 2, x: 1 } }), []);
    assert.deepEqual(computeChanges({ a: { x: 1 } }, { a: null }), [{ field: 'a', from: { x: 1 }, to: null }]);
    assert.deepEqual(computeChanges({ a: [{ x: 1 }] }, { a: [{ x: 2 }] }), [{ field: 'a', from: [{ x: 1 }], to: [{ x: 2 }] }]);
    // A field present with null and a field absent are different states.
    assert.deepEqual(computeChanges({ a: null }, {}), [{ field: 'a', from: null, to: null }]);
  });
});

describe('change-aware notifications', () => {
  let ctx: TestContext;
  let world: World;
  before(async () => {
    ctx = await createTestApp();
    world = await seedWorld(ctx);
  });
  after(() => ctx.close());
  beforeEach(async () => {
    await ctx.db.exec(`DELETE FROM deliveries; DELETE FROM events; DELETE FROM webhooks; DELETE FROM entity_snapshots;`);
  });

  const pub = (eventId: string, topic: string, fields: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    postEvent(ctx, world.headers.admin, sampleEvent(topic, world, { event_id: eventId, publication: publication(101, fields), ...extra }));

  test('publication/update: null without an earlier snapshot, then what changed since the last accepted publication', async () => {
    await insertWebhook(ctx.db, { topic: 'publication/update' });
    assert.equal((await pub('u1', 'publication/update', { stock: 1 })).statusCode, 202);
    assert.equal((await bodyOf(ctx, 'u1')).payload.changes, null);

    const response = await pub('u2', 'publication/update', { stock: 2, price: 12.5, product: { id: 1001, sku: 'SKU-101', name: 'Desk lamp', packages_deprecated: 1, images: [] } });
    assert.deepEqual(response.json(), { event_id: 'u2', deliveries: 1 });
    assert.deepEqual((await bodyOf(ctx, 'u2')).payload.changes, [
      { field: 'stock', from: 1, to: 2 },
      { field: 'product.name', from: 'Lamp', to: 'Desk lamp' },
      { field: 'product.images', from: [{ name: 'a.jpg', position: 1 }], to: [] },
      { field: 'price', from: null, to: 12.5 },
    ]);
  });

  test('publication/create writes the snapshot without computing changes; a removed field is reported with to null', async () => {
    await insertWebhook(ctx.db, { topic: 'publication/update' });
    await insertWebhook(ctx.db, { topic: 'publication/create' });
    await pub('c1', 'publication/create', { stock: 1, discount: 5 });
    assert.equal((await bodyOf(ctx, 'c1')).payload.changes, null);
    const { discount: _gone, ...withoutDiscount } = publication(101, { stock: 1 }) as Record<string, unknown>;
    await postEvent(ctx, world.headers.admin, sampleEvent('publication/update', world, { event_id: 'c2', publication: withoutDiscount }));
    assert.deepEqual((await bodyOf(ctx, 'c2')).payload.changes, [{ field: 'discount', from: 5, to: null }]);
  });

  test('a changes field sent by the producer is kept as given, an explicit null too', async () => {
    await insertWebhook(ctx.db, { topic: 'publication/update' });
    await pub('p1', 'publication/update', { stock: 1 });
    await pub('p2', 'publication/update', { stock: 2 }, { changes: { stock: [1, 2] } });
    assert.deepEqual((await bodyOf(ctx, 'p2')).payload.changes, { stock: [1, 2] });
    await pub('p3', 'publication/update', { stock: 3 }, { changes: null });
    assert.equal((await bodyOf(ctx, 'p3')).payload.changes, null);
    // The snapshot moved on with each: the next diff is against stock 3.
    await pub('p4', 'publication/update', { stock: 4 });
    assert.deepEqual((await bodyOf(ctx, 'p4')).payload.changes, [{ field: 'stock', from: 3, to: 4 }]);
  });

  test('snapshots are per marketplace, seller and entity', async () => {
    await insertWebhook(ctx.db, { topic: 'publication/update' });
    await pub('s1', 'publication/update', { stock: 1 });
    const other = sampleEvent('publication/update', world, { event_id: 's2', seller_id: 2, marketplace_connection_id: world.connections['2:MKT'], publication: publication(101, { stock: 9 }) });
    assert.equal((await postEvent(ctx, world.headers.admin, other)).statusCode, 202);
    assert.equal((await bodyOf(ctx, 's2')).payload.changes, null);
  });

  test('concurrent updates of one publication: each diff is against the one accepted before it', async () => {
    await insertWebhook(ctx.db, { topic: 'publication/update' });
    await pub('k0', 'publication/update', { stock: 0 });
    const values = [1, 2, 3, 4, 5, 6, 7, 8];
    const responses = await Promise.all(values.map((stock) => pub(`k${stock}`, 'publication/update', { stock })));
    for (const response of responses) assert.equal(response.statusCode, 202, response.body);
    // Each event says from → to; in intake order they form one chain 0 → … covering every value once.
    const next = new Map<unknown, unknown>();
    for (const stock of values) {
      const changes = (await bodyOf(ctx, `k${stock}`)).payload.changes as { field: string; from: unknown; to: unknown }[];
      assert.equal(changes.length, 1);
      assert.equal(changes[0]!.to, stock);
      assert.ok(!next.has(changes[0]!.from), `two events diffed against stock ${String(changes[0]!.from)}`);
      next.set(changes[0]!.from, stock);
    }
    const seen: unknown[] = [];
    for (let at: unknown = 0; next.has(at); at = next.get(at)) seen.push(next.get(at));
    assert.deepEqual([...seen].sort(), values);
  });

  test('state_from: null for the first event, then the last state_to, else the last order status', async () => {
    await insertWebhook(ctx.db, { topic: 'order/create' });
    await insertWebhook(ctx.db, { topic: 'order/update' });
    await insertWebhook(ctx.db, { topic: 'order/status_change' });
    const send = (eventId: string, topic: string, extra: Record<string, unknown>) => postEvent(ctx, world.headers.admin, sampleEvent(topic, world, { event_id: eventId, ...extra }));
    await send('o1', 'order/create', { order: order('ORD-1', { status: 'PROC' }) });
    assert.equal((await bodyOf(ctx, 'o1')).payload.state_from, null);
    await send('o2', 'order/status_change', { order: order('ORD-1', { status: 'PROC' }), state_to: 'APRO' });
    assert.equal((await bodyOf(ctx, 'o2')).payload.state_from, 'PROC');
    await send('o3', 'order/update', { order: order('ORD-1', { status: 'APRO', note: 'x' }) });
    assert.equal((await bodyOf(ctx, 'o3')).payload.state_from, 'APRO');
    await send('o4', 'order/update', { order: order('ORD-1', { status: 'SHIP', note: 'x' }) });
    assert.equal((await bodyOf(ctx, 'o4')).payload.state_from, 'APRO');
    await send('o5', 'order/status_change', { order: order('ORD-1', { status: 'SHIP' }), state_to: 'DELI' });
    assert.equal((await bodyOf(ctx, 'o5')).payload.state_from, 'SHIP');
  });

  test('state_from sent by the producer is kept as given, an explicit null too', async () => {
    await insertWebhook(ctx.db, { topic: 'order/status_change' });
    const send = (eventId: string, extra: Record<string, unknown>) => postEvent(ctx, world.headers.admin, sampleEvent('order/status_change', world, { event_id: eventId, ...extra }));
    await send('n1', { state_to: 'PROC' });
    await send('n2', { state_to: 'APRO', state_from: null });
    assert.equal((await bodyOf(ctx, 'n2')).payload.state_from, null);
    await send('n3', { state_to: 'SHIP', state_from: 'XXXX' });
    assert.equal((await bodyOf(ctx, 'n3')).payload.state_from, 'XXXX');
    await send('n4', { state_to: 'DELI' });
    assert.equal((await bodyOf(ctx, 'n4')).payload.state_from, 'SHIP');
  });

  test('an update that changed nothing (key order ignored, equal numbers) creates no deliveries and says unchanged; a repeat says the same', async () => {
    const hook = await insertWebhook(ctx.db, { topic: 'publication/update' });
    await pub('e1', 'publication/update', { stock: 1, price: 1.5 });
    const reordered = Object.fromEntries(Object.entries(publication(101, { stock: 1, price: 1.5 })).reverse());
    const same = sampleEvent('publication/update', world, { event_id: 'e2', publication: reordered, author: 'someone else' });
    const response = await postEvent(ctx, world.headers.admin, same);
    assert.equal(response.statusCode, 202);
    assert.deepEqual(response.json(), { event_id: 'e2', deliveries: 0, unchanged: true });
    assert.deepEqual(JSON.parse(response.body), { event_id: 'e2', deliveries: 0, unchanged: true });
    assert.equal((await deliveriesOf(ctx.db, hook.id)).length, 1);
    assert.deepEqual((await postEvent(ctx, world.headers.admin, same)).json(), { event_id: 'e2', deliveries: 0, unchanged: true });

    // The number sent as 1.50 is the same number.
    const text = JSON.stringify(sampleEvent('publication/update', world, { event_id: 'e3', publication: publication(101, { stock: 1, price: 1.5 }) })).replace('"price":1.5', '"price":1.50');
    const exact = await ctx.app.inject({ method: 'POST', url: '/v1/MKT/events', headers: { ...world.headers.admin, 'content-type': 'application/json' }, payload: text });
    assert.deepEqual(exact.json(), { event_id: 'e3', deliveries: 0, unchanged: true });

    const changed = await pub('e4', 'publication/update', { stock: 2, price: 1.5 });
    assert.deepEqual(changed.json(), { event_id: 'e4', deliveries: 1 });
    assert.equal((await deliveriesOf(ctx.db, hook.id)).length, 2);
  });

  test('order/update unchanged is skipped too; a create or a status change with the same order is not', async () => {
    const hook = await insertWebhook(ctx.db, { topic: 'order/update' });
    await insertWebhook(ctx.db, { topic: 'order/create' });
    const send = (eventId: string, topic: string) => postEvent(ctx, world.headers.admin, sampleEvent(topic, world, { event_id: eventId }));
    assert.deepEqual((await send('r1', 'order/create')).json(), { event_id: 'r1', deliveries: 1 });
    assert.deepEqual((await send('r2', 'order/create')).json(), { event_id: 'r2', deliveries: 1 });
    assert.deepEqual((await send('r3', 'order/update')).json(), { event_id: 'r3', deliveries: 0, unchanged: true });
    assert.equal((await deliveriesOf(ctx.db, hook.id)).length, 0);
  });

  test('deleting a seller deletes its snapshots', async () => {
    const connection = await seedConnection(ctx.db, 9, 'MKT');
    await postEvent(ctx, world.headers.admin, sampleEvent('publication/update', world, { seller_id: 9, marketplace_connection_id: connection, event_id: 'd1' }));
    const count = async () => (await ctx.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM entity_snapshots WHERE seller_id = 9`)).rows[0]!.n;
    assert.equal(await count(), 1);
    await ctx.db.exec(`DELETE FROM events WHERE seller_id = 9; DELETE FROM marketplace_connections WHERE seller_id = 9; DELETE FROM sellers WHERE id = 9;`);
    assert.equal(await count(), 0);
  });

  test('snapshots not replaced within the retention are pruned; the next event is a first one again', async () => {
    await insertWebhook(ctx.db, { topic: 'publication/update' });
    await pub('t1', 'publication/update', { stock: 1 });
    const day = 86_400_000;
    assert.equal(await pruneSnapshots(ctx.db, new Date(ctx.clock.now().getTime() + 29 * day), 30), 0);
    assert.equal(await pruneSnapshots(ctx.db, new Date(ctx.clock.now().getTime() + 31 * day), 30), 1);
    await pub('t2', 'publication/update', { stock: 2 });
    assert.equal((await bodyOf(ctx, 't2')).payload.changes, null);
  });
});

describe('SKIP_UNCHANGED_EVENTS=false', () => {
  let ctx: TestContext;
  let world: World;
  before(async () => {
    ctx = await createTestApp({ SKIP_UNCHANGED_EVENTS: 'false' });
    world = await seedWorld(ctx);
  });
  after(() => ctx.close());

  test('an unchanged update is sent like any other, with empty changes', async () => {
    const hook = await insertWebhook(ctx.db, { topic: 'publication/update' });
    await postEvent(ctx, world.headers.admin, sampleEvent('publication/update', world, { event_id: 'f1' }));
    const response = await postEvent(ctx, world.headers.admin, sampleEvent('publication/update', world, { event_id: 'f2' }));
    assert.deepEqual(response.json(), { event_id: 'f2', deliveries: 1 });
    assert.equal((await deliveriesOf(ctx.db, hook.id)).length, 2);
    assert.deepEqual((await bodyOf(ctx, 'f2')).payload.changes, []);
  });
});
