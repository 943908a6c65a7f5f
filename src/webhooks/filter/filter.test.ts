import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkFilter, FILTER_MAX_BYTES, matchesFilter, type Filter } from './filter.js';

const body = {
  seller_id: 1,
  topic_path: 'order/MKT/update',
  entity_id: 'ORD-1',
  payload: {
    order: { reference_order: 'ORD-1', status: 'APRO', total: 21.5, tags: ['vip', 'b2b'], products: [{ sku: 'SKU-1', quantity: 2 }], invoice: null },
    state_from: null,
    state_to: 'APRO',
    author: 'system',
  },
};

const matches = (filter: Filter) => {
  assert.deepEqual(checkFilter(filter), [], JSON.stringify(filter));
  return matchesFilter(filter, body);
};

describe('filter evaluation', () => {
  test('a literal is equality: scalars, null, arrays whole and objects with any key order', () => {
    assert.equal(matches({ 'payload.order.status': 'APRO' }), true);
    assert.equal(matches({ 'payload.order.status': 'PROC' }), false);
    assert.equal(matches({ 'payload.order.invoice': null }), true);
    assert.equal(matches({ 'payload.order.missing': null }), false, 'null is a value, not an absence');
    assert.equal(matches({ 'payload.order.tags': ['vip', 'b2b'] }), true);
    assert.equal(matches({ 'payload.order.tags': 'vip' }), false, 'no implicit matching of array elements');
    assert.equal(matches({ 'payload.order.products.0': { quantity: 2, sku: 'SKU-1' } }), true);
    assert.equal(matches({ 'payload.order.products.0.sku': 'SKU-1', seller_id: 1 }), true);
    assert.equal(matches({ 'payload.order.products.1.sku': 'SKU-1' }), false);
    assert.equal(matches({}), true);
  });

  test('$eq and $ne', () => {
    assert.equal(matches({ 'payload.order.total': { $eq: 21.5 } }), true);
    assert.equal(matches({ 'payload.order.total': { $ne: 21.5 } }), false);
    assert.equal(matches({ 'payload.order.total': { $ne: 3 } }), true);
    assert.equal(matches({ 'payload.nothing': { $ne: 3 } }), true, '$ne matches a missing field');
    assert.equal(matches({ 'payload.nothing': { $eq: null } }), false);
  });

  test('$in and $nin', () => {
    assert.equal(matches({ 'payload.order.status': { $in: ['APRO', 'PROC'] } }), true);
    assert.equal(matches({ 'payload.order.status': { $in: ['PROC'] } }), false);
    assert.equal(matches({ 'payload.order.status': { $in: [] } }), false);
    assert.equal(matches({ 'payload.order.status': { $nin: ['PROC'] } }), true);
    assert.equal(matches({ 'payload.order.status': { $nin: ['APRO'] } }), false);
    assert.equal(matches({ 'payload.nothing': { $nin: ['APRO'] } }), true);
  });

  test('$gt $gte $lt $lte compare numbers with numbers and strings with strings only', () => {
    assert.equal(matches({ 'payload.order.total': { $gt: 21 } }), true);
    assert.equal(matches({ 'payload.order.total': { $gt: 21.5 } }), false);
    assert.equal(matches({ 'payload.order.total': { $gte: 21.5 } }), true);
    assert.equal(matches({ 'payload.order.total': { $lt: 22 } }), true);
    assert.equal(matches({ 'payload.order.total': { $lt: 21.5 } }), false);
    assert.equal(matches({ 'payload.order.total': { $lte: 21.5 } }), true);
    assert.equal(matches({ 'payload.order.total': { $gt: 20, $lt: 21 } }), false, 'every operator must hold');
    assert.equal(matches({ 'payload.order.total': { $gt: '1' } }), false);
    assert.equal(matches({ 'payload.order.status': { $gte: 'A', $lt: 'B' } }), true);
    assert.equal(matches({ 'payload.nothing': { $lt: 5 } }), false);
  });

  test('$exists', () => {
    assert.equal(matches({ 'payload.state_from': { $exists: true } }), true);
    assert.equal(matches({ 'payload.nothing': { $exists: true } }), false);
    assert.equal(matches({ 'payload.nothing': { $exists: false } }), true);
    assert.equal(matches({ 'payload.order.status.deeper': { $exists: false } }), true);
  });

  test('$and, $or, $not', () => {
    assert.equal(matches({ $and: [{ 'payload.order.status': 'APRO' }, { seller_id: 1 }] }), true);
    assert.equal(matches({ $and: [{ 'payload.order.status': 'APRO' }, { seller_id: 2 }] }), false);
    assert.equal(matches({ $or: [{ 'payload.order.status': 'PROC' }, { seller_id: 1 }] }), true);
    assert.equal(matches({ $or: [{ 'payload.order.status': 'PROC' }, { seller_id: 2 }] }), false);
    assert.equal(matches({ $not: { seller_id: 2 } }), true);
    assert.equal(matches({ $not: { seller_id: 1 } }), false);
    assert.equal(matches({ seller_id: 1, $or: [{ 'payload.order.total': { $gt: 100 } }, { 'payload.order.tags': { $in: [['vip', 'b2b']] } }] }), true);
  });
});

describe('filter validation', () => {
  const problems = (filter: unknown) => checkFilter(filter);

  test('each problem names its path within the filter', () => {
    assert.deepEqual(problems({ 'payload.order.status': { $regex: '^A' } }), [{ path: 'payload.order.status.$regex', message: 'unknown operator $regex (use $eq, $ne, $in, $nin, $gt, $gte, $lt, $lte, $exists)' }]);
    assert.deepEqual(problems({ $where: 'x' }).map((p) => p.path), ['$where']);
    assert.deepEqual(problems({ $or: [{ a: { $in: 'x' } }, 5] }).map((p) => p.path), ['$or.0.a.$in', '$or.1']);
    assert.deepEqual(problems({ $and: [] }).map((p) => p.path), ['$and']);
    assert.deepEqual(problems({ $and: {} }).map((p) => p.path), ['$and']);
    assert.deepEqual(problems({ $not: [] }).map((p) => p.path), ['$not']);
    assert.deepEqual(problems({ a: { $gt: true } }).map((p) => p.path), ['a.$gt']);
    assert.deepEqual(problems({ a: { $gt: null } }).map((p) => p.path), ['a.$gt']);
    assert.deepEqual(problems({ a: { $exists: 1 } }).map((p) => p.path), ['a.$exists']);
    assert.deepEqual(problems({ a: { $eq: 1, b: 2 } }).map((p) => p.path), ['a.b']);
    assert.deepEqual(problems({ 'a..b': 1 }).map((p) => p.path), ['a..b']);
    assert.deepEqual(problems({ '': 1 }).map((p) => p.path), ['']);
    assert.deepEqual(problems([]), [{ path: '', message: 'must be an object' }]);
    assert.deepEqual(problems('a'), [{ path: '', message: 'must be an object' }]);
  });

  test(`at most ${FILTER_MAX_BYTES} bytes and 8 levels`, () => {
    const big = { a: { $in: Array.from({ length: 1000 }, (_, i) => `v${i}`) } };
    assert.match(problems(big)[0]!.message, /at most 4096 bytes/);
    const justFits = { a: 'x'.repeat(FILTER_MAX_BYTES - JSON.stringify({ a: '' }).length) };
    assert.deepEqual(problems(justFits), []);
    assert.match(problems({ a: 'x'.repeat(FILTER_MAX_BYTES) })[0]!.message, /bytes/);
    let eight: Filter = { a: 1 };
    for (let level = 1; level < 8; level++) eight = { $not: eight };
    assert.deepEqual(problems(eight), []);
    assert.match(problems({ $not: eight })[0]!.message, /at most 8 levels/);
  });
});
