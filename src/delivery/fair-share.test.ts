import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { allocateSlots, type DueWebhook, type TenantLoad } from './fair-share.js';

const options = { free: 10, concurrency: 10, workers: 1, share: 0.5, perWebhookLimit: 10 };
const hook = (webhookId: number, tenant: string, due = 10, inFlight = 0): DueWebhook => ({ webhookId, tenant, due, inFlight });
const total = (quotas: Map<number, number>) => [...quotas.values()].reduce((a, b) => a + b, 0);

describe('the fairness rule (allocateSlots)', () => {
  test('one tenant alone gets at most its share of the worker, however much it has due', () => {
    const { quotas } = allocateSlots([hook(1, 'seller:1'), hook(2, 'seller:1')], new Map(), options);
    assert.equal(total(quotas), 5);
    // Round-robin across its webhooks.
    assert.deepEqual([...quotas], [[1, 3], [2, 2]]);
  });

  test('slots go round-robin across tenants, then across each tenant\'s webhooks', () => {
    const webhooks = [hook(1, 'seller:1'), hook(2, 'seller:1'), hook(3, 'seller:2', 2), hook(4, 'marketplace:M')];
    const { quotas } = allocateSlots(webhooks, new Map(), { ...options, free: 9 });
    assert.equal(total(quotas), 9);
    assert.equal(quotas.get(3), 2); // seller 2 has only 2 due
    assert.deepEqual([quotas.get(1), quotas.get(2)], [2, 1]);
    assert.equal(quotas.get(4), 4);
  });

  test('leases a tenant holds count against it: its own worker\'s and all workers\' in flight', () => {
    const loads = new Map<string, TenantLoad>([['seller:1', { total: 3, mine: 4 }], ['seller:2', { total: 9, mine: 0 }]]);
    const { quotas } = allocateSlots([hook(1, 'seller:1'), hook(2, 'seller:2')], loads, { ...options, workers: 2 });
    assert.equal(quotas.get(1), 1); // 5 per worker - 4 mine
    assert.equal(quotas.get(2), 1); // 10 over 2 workers - 9 in flight
  });

  test('a webhook at its in-flight limit gets nothing; the tenant\'s other webhook gets the room', () => {
    const { quotas } = allocateSlots([hook(1, 'seller:1', 10, 10), hook(2, 'seller:1')], new Map(), { ...options, share: 1 });
    assert.equal(quotas.get(1), undefined);
    assert.equal(quotas.get(2), 10);
  });

  test('the next claim starts after the tenant the previous one ended on', () => {
    const webhooks = [hook(1, 'a'), hook(2, 'b'), hook(3, 'c')];
    const first = allocateSlots(webhooks, new Map(), { ...options, free: 1 });
    assert.deepEqual([[...first.quotas], first.last], [[[1, 1]], 'a']);
    const second = allocateSlots(webhooks, new Map(), { ...options, free: 1, after: first.last });
    assert.deepEqual([[...second.quotas], second.last], [[[2, 1]], 'b']);
    const third = allocateSlots(webhooks, new Map(), { ...options, free: 1, after: 'c' });
    assert.deepEqual([...third.quotas], [[1, 1]]);
  });
});
