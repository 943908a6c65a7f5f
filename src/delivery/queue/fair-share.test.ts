import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { allocateSlots, type DueWebhook, type Quota, type TenantLoad } from './fair-share.js';

const options = { free: 10, concurrency: 10, workers: 1, share: 0.5, perWebhookLimit: 10 };
/** A webhook with one stream (one seller). */
const hook = (webhookId: number, tenant: string, due = 10, inFlight = 0): DueWebhook => ({ webhookId, tenant, inFlight, streams: [{ key: '1', due, inFlight }] });
/** Rows per webhook, in the order the quotas list them. */
const perWebhook = (quotas: readonly Quota[]) => {
  const byWebhook = new Map<number, number>();
  for (const quota of quotas) byWebhook.set(quota.webhookId, (byWebhook.get(quota.webhookId) ?? 0) + quota.n);
  return byWebhook;
};
const total = (quotas: readonly Quota[]) => quotas.reduce((sum, quota) => sum + quota.n, 0);

describe('the fairness rule (allocateSlots)', () => {
  test('one tenant alone gets at most its share of the worker, however much it has due', () => {
    const { quotas } = allocateSlots([hook(1, 'seller:1'), hook(2, 'seller:1')], new Map(), options);
    assert.equal(total(quotas), 5);
    // Round-robin across its webhooks.
    assert.deepEqual([...perWebhook(quotas)], [[1, 3], [2, 2]]);
  });

  test('slots go round-robin across tenants, then across each tenant\'s webhooks', () => {
    const webhooks = [hook(1, 'seller:1'), hook(2, 'seller:1'), hook(3, 'seller:2', 2), hook(4, 'marketplace:M')];
    const allocation = allocateSlots(webhooks, new Map(), { ...options, free: 9 });
    assert.equal(total(allocation.quotas), 9);
    const quotas = perWebhook(allocation.quotas);
    assert.equal(quotas.get(3), 2); // seller 2 has only 2 due
    assert.deepEqual([quotas.get(1), quotas.get(2)], [2, 1]);
    assert.equal(quotas.get(4), 4);
  });

  test('leases a tenant holds count against it: its own worker\'s and all workers\' in flight', () => {
    const loads = new Map<string, TenantLoad>([['seller:1', { total: 3, mine: 4 }], ['seller:2', { total: 9, mine: 0 }]]);
    const quotas = perWebhook(allocateSlots([hook(1, 'seller:1'), hook(2, 'seller:2')], loads, { ...options, workers: 2 }).quotas);
    assert.equal(quotas.get(1), 1); // 5 per worker - 4 mine
    assert.equal(quotas.get(2), 1); // 10 over 2 workers - 9 in flight
  });

  test('a webhook at its in-flight limit gets nothing; the tenant\'s other webhook gets the room', () => {
    const quotas = perWebhook(allocateSlots([hook(1, 'seller:1', 10, 10), hook(2, 'seller:1')], new Map(), { ...options, share: 1 }).quotas);
    assert.equal(quotas.get(1), undefined);
    assert.equal(quotas.get(2), 10);
  });

  test('the next claim starts after the tenant the previous one ended on', () => {
    const webhooks = [hook(1, 'a'), hook(2, 'b'), hook(3, 'c')];
    const first = allocateSlots(webhooks, new Map(), { ...options, free: 1 });
    assert.deepEqual([[...perWebhook(first.quotas)], first.last], [[[1, 1]], 'a']);
    const second = allocateSlots(webhooks, new Map(), { ...options, free: 1, after: first.last });
    assert.deepEqual([[...perWebhook(second.quotas)], second.last], [[[2, 1]], 'b']);
    const third = allocateSlots(webhooks, new Map(), { ...options, free: 1, after: 'c' });
    assert.deepEqual([...perWebhook(third.quotas)], [[1, 1]]);
  });

  test('inside a shared webhook, a seller with nothing in flight goes before one with a backlog in flight', () => {
    const shared: DueWebhook = {
      webhookId: 1,
      tenant: 'marketplace:M',
      inFlight: 8,
      streams: [
        { key: 'A', due: 10, inFlight: 8 },
        { key: 'B', due: 1, inFlight: 0 },
      ],
    };
    // Two slots of the webhook's 10 are left: B's one delivery gets one of them.
    const { quotas } = allocateSlots([shared], new Map(), { ...options, share: 1 });
    assert.deepEqual(quotas.toSorted((a, b) => a.key.localeCompare(b.key)), [{ webhookId: 1, key: 'A', n: 1 }, { webhookId: 1, key: 'B', n: 1 }]);
    // One slot left: it is B's.
    const one = allocateSlots([{ ...shared, inFlight: 9 }], new Map(), { ...options, share: 1 });
    assert.deepEqual(one.quotas, [{ webhookId: 1, key: 'B', n: 1 }]);
  });

  test('inside a webhook, slots are spread over its streams, the fewest in flight first', () => {
    const webhook: DueWebhook = {
      webhookId: 1,
      tenant: 'marketplace:M',
      inFlight: 0,
      streams: [
        { key: 'A', due: 10, inFlight: 0 },
        { key: 'B', due: 10, inFlight: 0 },
        { key: 'C', due: 2, inFlight: 0 },
      ],
    };
    const { quotas } = allocateSlots([webhook], new Map(), { ...options, share: 1, free: 8 });
    assert.deepEqual(quotas.map((quota) => [quota.key, quota.n]).sort(), [['A', 3], ['B', 3], ['C', 2]]);
  });
});
