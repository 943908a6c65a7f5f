import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { deliveriesOf, order, postEvent, sampleEvent, seedWorld, type World } from '../testing/events.js';
import { assertProblem } from '../testing/webhooks.js';

describe('webhook filters (API and fan-out)', () => {
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

  const request = (who: keyof World['headers'] | null, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
    ctx.app.inject({ method, url, headers: who ? world.headers[who] : {}, ...(payload ? { payload } : {}) });
  const create = (code: string, extra: Record<string, unknown> = {}, who: keyof World['headers'] = 'admin') =>
    request(who, 'POST', '/v1/MKT/webhooks', { code, name: code, topic: 'order/update', callback_url: 'https://receiver.example.com/hook', ...extra });
  const idOf = async (code: string) => Number((await ctx.db.query<{ id: string }>(`SELECT id FROM webhooks WHERE code = $1`, [code])).rows[0]!.id);

  test('filter is null by default, returned by create, get and update, never in list items; null removes it', async () => {
    const plain = await create('plain');
    assert.equal(plain.statusCode, 201, plain.body);
    assert.equal(plain.json().filter, null);
    const filter = { 'payload.order.status': { $in: ['APRO', 'PROC'] }, $or: [{ seller_id: 1 }, { 'payload.state_to': { $exists: true } }] };
    const created = await create('filtered', { filter });
    assert.equal(created.statusCode, 201, created.body);
    assert.deepEqual(created.json().filter, filter);
    assert.deepEqual((await request('admin', 'GET', '/v1/MKT/webhooks/filtered')).json().filter, filter);
    const list = (await request('admin', 'GET', '/v1/MKT/webhooks')).json() as Record<string, unknown>[];
    assert.equal(list.length, 2);
    for (const item of list) assert.equal(Object.hasOwn(item, 'filter'), false);

    const changed = await request('admin', 'PATCH', '/v1/MKT/webhooks/filtered', { filter: { seller_id: 2 } });
    assert.equal(changed.statusCode, 200, changed.body);
    assert.deepEqual(changed.json().filter, { seller_id: 2 });
    const untouched = await request('admin', 'PATCH', '/v1/MKT/webhooks/filtered', { name: 'renamed' });
    assert.deepEqual(untouched.json().filter, { seller_id: 2 });
    const removed = await request('admin', 'PATCH', '/v1/MKT/webhooks/filtered', { filter: null });
    assert.equal(removed.json().filter, null);

    // The history says when the filter changed, with its text.
    const { rows } = await ctx.db.query<{ action: string; changes: { field: string; before?: unknown; after?: unknown }[] }>(
      `SELECT action, changes FROM webhook_history WHERE webhook_code = 'filtered' ORDER BY id`,
    );
    const filterChanges = rows.flatMap((row) => row.changes.filter((change) => change.field === 'filter'));
    assert.equal(filterChanges.length, 3);
    assert.deepEqual(filterChanges[1], { field: 'filter', before: filterChanges[0]!.after, after: '{"seller_id":2}' });
    assert.equal(filterChanges[2]!.after, null);
  });

  test('an invalid filter is 400 validation_failed naming its path, on create and update; limits of size and depth', async () => {
    const refused = assertProblem(await create('bad', { filter: { 'payload.order.status': { $regex: '^A' } } }), 400, 'validation_failed');
    assert.deepEqual(refused.errors!.map((error) => error.field), ['body.filter.payload.order.status.$regex']);
    const wrongOperand = assertProblem(await create('bad', { filter: { $or: [{ 'payload.order.total': { $gt: true } }] } }), 400, 'validation_failed');
    assert.deepEqual(wrongOperand.errors!.map((error) => error.field), ['body.filter.$or.0.payload.order.total.$gt']);
    const tooBig = assertProblem(await create('bad', { filter: { a: 'x'.repeat(5000) } }), 400, 'validation_failed');
    assert.deepEqual(tooBig.errors!.map((error) => error.field), ['body.filter']);
    assert.match(tooBig.detail, /4096 bytes/);
    const tooDeep = assertProblem(await create('bad', { filter: { $not: { $not: { $not: { $not: { $not: { $not: { $not: { $not: { a: 1 } } } } } } } } } }), 400, 'validation_failed');
    assert.match(tooDeep.detail, /8 levels/);
    assertProblem(await create('bad', { filter: ['a'] }), 400, 'validation_failed');
    assert.equal((await ctx.db.query(`SELECT 1 FROM webhooks`)).rowCount, 0);

    assert.equal((await create('good')).statusCode, 201);
    const patch = assertProblem(await request('admin', 'PATCH', '/v1/MKT/webhooks/good', { filter: { $nor: [] } }), 400, 'validation_failed');
    assert.deepEqual(patch.errors!.map((error) => error.field), ['body.filter.$nor']);
  });

  test('the fan-out: a webhook whose filter does not match gets no delivery; one that matches (paused too) and one without a filter do', async () => {
    await create('no-filter');
    await create('match', { filter: { 'payload.order.status': 'SHIP', 'payload.order.total': { $gte: 100 } } });
    await create('no-match', { filter: { 'payload.order.status': 'SHIP', 'payload.order.total': { $lt: 100 } } });
    await create('paused-match', { filter: { 'payload.state_from': 'APRO' } });
    await request('admin', 'PATCH', '/v1/MKT/webhooks/paused-match', { active: false });

    await postEvent(ctx, world.headers.admin, sampleEvent('order/create', world, { event_id: 'f0' }));
    const response = await postEvent(ctx, world.headers.admin, sampleEvent('order/update', world, { event_id: 'f1', order: order('ORD-1', { status: 'SHIP', total: 150 }) }));
    assert.equal(response.statusCode, 202, response.body);
    assert.deepEqual(response.json(), { event_id: 'f1', deliveries: 3 });
    assert.equal((await deliveriesOf(ctx.db, await idOf('no-filter'))).length, 1);
    assert.equal((await deliveriesOf(ctx.db, await idOf('match'))).length, 1);
    assert.equal((await deliveriesOf(ctx.db, await idOf('no-match'))).length, 0);
    assert.deepEqual((await deliveriesOf(ctx.db, await idOf('paused-match'))).map((delivery) => delivery.status), ['held']);

    // Another order total: now only the other filter matches.
    await ctx.db.exec(`DELETE FROM webhooks WHERE code = 'no-filter'`);
    const none = await postEvent(ctx, world.headers.admin, sampleEvent('order/update', world, { event_id: 'f2', order: order('ORD-1', { status: 'SHIP', total: 50, note: 'x' }) }));
    assert.deepEqual(none.json(), { event_id: 'f2', deliveries: 1 });
    assert.equal((await deliveriesOf(ctx.db, await idOf('no-match'))).length, 1, 'total 50 < 100 matches no-match now');
    assert.equal((await deliveriesOf(ctx.db, await idOf('match'))).length, 1);
  });

  test('filter-test answers whether the filter matches the sample; 400 for an invalid filter', async () => {
    const notification = { seller_id: 1, topic_path: 'order/MKT/update', entity_id: 'ORD-1', payload: { order: { reference_order: 'ORD-1', status: 'APRO' }, state_from: null, state_to: null, author: 'system' } };
    const yes = await request('seller1', 'POST', '/v1/MKT/webhooks/filter-test', { filter: { 'payload.order.status': 'APRO' }, notification });
    assert.equal(yes.statusCode, 200, yes.body);
    assert.deepEqual(yes.json(), { matches: true });
    const no = await request('seller1', 'POST', '/v1/MKT/webhooks/filter-test', { filter: { 'payload.state_from': { $exists: false } }, notification });
    assert.deepEqual(no.json(), { matches: false });
    const bad = assertProblem(await request('seller1', 'POST', '/v1/MKT/webhooks/filter-test', { filter: { 'payload.order.status': { $in: 'APRO' } }, notification }), 400, 'validation_failed');
    assert.deepEqual(bad.errors!.map((error) => error.field), ['body.filter.payload.order.status.$in']);
    assertProblem(await request('seller1', 'POST', '/v1/MKT/webhooks/filter-test', { filter: {} }), 400, 'validation_failed');
  });

  test('filter-test has the tenancy of creating a webhook there: 401 without a token, 404 in a marketplace the caller may not use', async () => {
    const body = { filter: {}, notification: {} };
    assertProblem(await request(null, 'POST', '/v1/MKT/webhooks/filter-test', body), 401, 'unauthorized');
    // Seller 2 sells on MKT only; the marketplace user speaks for MKT only.
    assertProblem(await request('seller2', 'POST', '/v1/OTHER/webhooks/filter-test', body), 404, 'not_found');
    assertProblem(await request('marketplace', 'POST', '/v1/OTHER/webhooks/filter-test', body), 404, 'not_found');
    assert.equal((await request('seller2', 'POST', '/v1/MKT/webhooks/filter-test', body)).statusCode, 200);
    assert.equal((await request('marketplace', 'POST', '/v1/MKT/webhooks/filter-test', body)).statusCode, 200);
  });
});
