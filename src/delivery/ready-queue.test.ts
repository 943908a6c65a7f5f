import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ClaimedDelivery } from './claim.js';
import { LOOK_AHEAD, tenantCap } from './fair-share.js';
import { ReadyQueue, RECENT_SEND_MS } from './ready-queue.js';

let nextId = 1;
const delivery = (webhookId: number, tenant = 'seller:1'): ClaimedDelivery => ({
  id: nextId++,
  message_id: `msg_${nextId}`,
  webhook_id: webhookId,
  tenant,
  attempts: 0,
  callback_url: 'https://receiver.example/hook',
  headers: {},
  headers_encrypted: null,
  secret_encrypted: '',
  previous_secret_encrypted: null,
  previous_secret_expires_at: null,
  body: '{}',
});
const many = (n: number, webhookId: number, tenant?: string) => Array.from({ length: n }, () => delivery(webhookId, tenant));
const ids = (deliveries: ClaimedDelivery[]) => deliveries.map((d) => d.id);

describe('the ready queue: the caps hold at the start of each send', () => {
  const caps = { concurrency: 10, perWebhookLimit: 3, tenantShare: 0.5, maxWaitMs: 1000 };

  test('a webhook sends at most its limit at once; the rest waits, oldest first, and goes as sends end', () => {
    const queue = new ReadyQueue(caps);
    const claimed = many(5, 1);
    queue.add(claimed, 0);
    const first = queue.take(0);
    assert.deepEqual(ids(first.send), ids(claimed.slice(0, 3)));
    assert.equal(queue.size, 2);
    assert.equal(queue.sending, 3);
    assert.deepEqual(queue.take(1).send, [], 'nothing more while the three are out');
    queue.finished(claimed[1]!);
    assert.deepEqual(ids(queue.take(2).send), [claimed[3]!.id]);
    assert.deepEqual(queue.lookAhead(2), new Map([[1, 3 * LOOK_AHEAD]]), 'the claim may take LOOK_AHEAD deliveries ahead of each send');
  });

  test("another worker's leases on a webhook or a tenant leave this worker that much less", () => {
    const queue = new ReadyQueue(caps);
    queue.setOtherLeases({ webhooks: new Map([[1, 2]]), tenants: new Map(), workers: 2 });
    queue.add(many(3, 1), 0);
    assert.equal(queue.take(0).send.length, 1, 'limit 3 less the other worker\'s 2');
    // Tenant caps: 5 of this worker's 10 slots; 10 of the two workers' 20, of which the other holds 7.
    const other = new ReadyQueue({ ...caps, perWebhookLimit: 100 });
    other.setOtherLeases({ webhooks: new Map(), tenants: new Map([['seller:2', 7]]), workers: 2 });
    other.add([...many(6, 2, 'seller:2'), ...many(6, 3, 'seller:3')], 0);
    const { send } = other.take(0);
    assert.equal(send.filter((d) => d.tenant === 'seller:2').length, 3);
    assert.equal(send.filter((d) => d.tenant === 'seller:3').length, 5);
  });

  test('the claim looks ahead of recent sends only: a slow send gets nothing claimed behind it', () => {
    const queue = new ReadyQueue(caps);
    queue.add([...many(2, 1), ...many(1, 2)], 0);
    queue.take(0);
    assert.deepEqual(queue.lookAhead(RECENT_SEND_MS - 1), new Map([[1, 2 * LOOK_AHEAD], [2, LOOK_AHEAD]]));
    assert.deepEqual(queue.lookAhead(RECENT_SEND_MS), new Map(), 'a second on: slow sends, counted in the caps again');
  });

  test('at most `concurrency` sends at once over all webhooks', () => {
    const queue = new ReadyQueue({ ...caps, tenantShare: 1 });
    queue.add([1, 2, 3, 4, 5].flatMap((webhook) => many(3, webhook)), 0);
    assert.equal(queue.take(0).send.length, 10);
    assert.equal(queue.size, 5);
  });

  test('a delivery still waiting maxWaitMs after its claim is handed back rather than sent', () => {
    const queue = new ReadyQueue(caps);
    const claimed = many(5, 1);
    queue.add(claimed, 0);
    queue.take(0);
    assert.deepEqual(queue.take(999), { send: [], expired: [] });
    queue.finished(claimed[0]!);
    assert.deepEqual(ids(queue.take(1000).send), [claimed[3]!.id], 'within its wait: sent');
    queue.finished(claimed[1]!);
    const late = queue.take(1001);
    assert.deepEqual([ids(late.send), ids(late.expired)], [[], [claimed[4]!.id]], 'past it: handed back');
    assert.equal(queue.size, 0);
  });

  test("one tenant's whole look-ahead leaves another tenant its share of the next claim", () => {
    // 10 slots, a tenant's share 5: tenant A sends 5, and the claim may leave LOOK_AHEAD × 5 waiting behind them.
    const queue = new ReadyQueue({ ...caps, perWebhookLimit: 100 });
    queue.add(many(5 + LOOK_AHEAD * 5, 1, 'seller:1'), 0);
    assert.equal(queue.take(0).send.length, 5);
    const room = queue.room(0, 5);
    assert.ok(room >= tenantCap(10, 0.5), `room for another tenant's share (${room})`);
    assert.equal(queue.room(3, 5), room - 3, 'the rows a claim in progress set out to take count as waiting');
    assert.ok(queue.room(0, 5 + 2 * 10) <= 0, 'past another `concurrency` of sends waiting for their record, nothing more');
  });

  test('without time to wait (maxWaitMs 0) it does not look ahead; what cannot go at once is handed back', () => {
    const queue = new ReadyQueue({ ...caps, maxWaitMs: 0 });
    assert.equal(queue.looksAhead, false);
    const claimed = many(4, 1);
    queue.add(claimed, 0);
    const { send, expired } = queue.take(1);
    assert.deepEqual([send.length, ids(expired)], [3, [claimed[3]!.id]]);
  });
});
