import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { order, postEvent, publication, sampleEvent, seedWorld, type World } from '../testing/events.js';

describe('event intake validation', () => {
  let ctx: TestContext;
  let world: World;
  before(async () => {
    ctx = await createTestApp();
    world = await seedWorld(ctx);
  });
  after(() => ctx.close());

  const fieldsOf = async (body: unknown) => {
    const response = await postEvent(ctx, world.headers.admin, body);
    assert.equal(response.statusCode, 400, JSON.stringify(response.json()));
    assert.equal(response.json().code, 'validation_failed');
    return (response.json().errors as { field: string }[]).map((error) => error.field).sort();
  };

  test('missing required fields are each named', async () => {
    assert.deepEqual(await fieldsOf({}), ['body.author', 'body.entity_id', 'body.seller_id', 'body.topic']);
  });

  test('an unknown topic, a status-specific topic and unknown fields are refused', async () => {
    assert.deepEqual(await fieldsOf(sampleEvent('order/create', world, { topic: 'order/deleted' })), ['body.topic']);
    assert.deepEqual(await fieldsOf(sampleEvent('order/create', world, { topic: 'order/status_change/entered_APRO' })), ['body.topic']);
    assert.deepEqual(await fieldsOf(sampleEvent('order/create', world, { colour: 'red' })), ['body.colour']);
  });

  test('publication topics need a publication whose id is entity_id and a connection of the seller here', async () => {
    const base = sampleEvent('publication/create', world);
    const { publication: _p, marketplace_connection_id: _c, ...bare } = base;
    assert.deepEqual(await fieldsOf(bare), ['body.marketplace_connection_id', 'body.publication']);
    assert.deepEqual(await fieldsOf({ ...base, publication: publication(102) }), ['body.publication.id']);
    assert.deepEqual(await fieldsOf({ ...base, entity_id: 'ORD-1', publication: { ...publication(1), id: 'x' } }), ['body.publication.id']);
    assert.deepEqual(await fieldsOf({ ...base, entity_id: '101' }), ['body.entity_id', 'body.publication.id']);
    // Seller 2's connection, seller 1's connection to another marketplace, a connection that does not exist.
    for (const id of [world.connections['2:MKT'], world.connections['1:OTHER'], 999_999]) {
      assert.deepEqual(await fieldsOf({ ...base, marketplace_connection_id: id }), ['body.marketplace_connection_id']);
    }
    assert.deepEqual(await fieldsOf({ ...base, state_to: 'APRO', order: order('ORD-1') }), ['body.order', 'body.state_to']);
  });

  test('order topics need an order whose reference_order is entity_id; status_change needs a valid state_to', async () => {
    const base = sampleEvent('order/status_change', world);
    const { order: _o, state_to: _s, ...bare } = base;
    assert.deepEqual(await fieldsOf(bare), ['body.order', 'body.state_to']);
    assert.deepEqual(await fieldsOf({ ...base, order: order('ORD-2') }), ['body.order.reference_order']);
    assert.deepEqual(await fieldsOf({ ...base, entity_id: 5, order: order('5') }), ['body.entity_id', 'body.order.reference_order']);
    for (const state of ['', 'A B', 'x'.repeat(33), 'entered/APRO', 12]) {
      assert.deepEqual(await fieldsOf({ ...base, state_to: state }), ['body.state_to'], String(state));
    }
    assert.deepEqual(await fieldsOf({ ...base, state_from: 'no such' }), ['body.state_from']);
    assert.deepEqual(await fieldsOf({ ...base, publication: publication(1), changes: {} }), ['body.changes', 'body.publication']);
    const { order: _order, ...withoutOrder } = sampleEvent('order/create', world);
    assert.deepEqual(await fieldsOf({ ...withoutOrder, order: { id: 1 } }), ['body.order.reference_order']);
  });

  test('bounds: event_id and author at most 200 characters, types are not coerced', async () => {
    const ok = sampleEvent('order/create', world, { event_id: 'e'.repeat(200), author: 'a'.repeat(200) });
    assert.equal((await postEvent(ctx, world.headers.admin, ok)).statusCode, 202);
    assert.deepEqual(await fieldsOf(sampleEvent('order/create', world, { event_id: 'e'.repeat(201) })), ['body.event_id']);
    assert.deepEqual(await fieldsOf(sampleEvent('order/create', world, { event_id: 'has space' })), ['body.event_id']);
    assert.deepEqual(await fieldsOf(sampleEvent('order/create', world, { author: 'a'.repeat(201) })), ['body.author']);
    assert.deepEqual(await fieldsOf(sampleEvent('order/create', world, { author: '' })), ['body.author']);
    assert.deepEqual(await fieldsOf(sampleEvent('order/create', world, { seller_id: '1' })), ['body.seller_id']);
    assert.deepEqual(await fieldsOf(sampleEvent('order/create', world, { entity_id: true })), ['body.entity_id']);
    assert.deepEqual(await fieldsOf(sampleEvent('publication/update', world, { changes: 'price' })), ['body.changes']);
    assert.deepEqual(await fieldsOf(sampleEvent('publication/create', world, { marketplace_connection_id: '1' })), ['body.marketplace_connection_id']);
  });

  test('an unknown marketplace is 404', async () => {
    const response = await postEvent(ctx, world.headers.admin, sampleEvent('order/create', world), 'NOPE');
    assert.equal(response.statusCode, 404);
    assert.equal(response.json().code, 'not_found');
  });
});
