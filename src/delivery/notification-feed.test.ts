import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { buildApp, type App } from '../app.js';
import { insertWebhook, order, postEvent, sampleEvent, seedWorld, type World } from '../testing/events.js';
import type { Database } from '../db/database.js';
import { countedDatabase } from '../testing/counted-database.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { seedDelivery } from '../testing/deliveries.js';

const DAY = 86_400_000;

interface FeedItem {
  webhook_id: string;
  created_at: string;
  entity_id: string;
  sequence: number;
  topic_path: string;
  notification: Record<string, unknown>;
}

/** Issue 30: GET /v1/{marketplace}/webhooks/{code}/notifications. */
describe('the notification feed', () => {
  let ctx: TestContext;
  let world: World;
  let hook: { id: number; code: string };

  before(async () => {
    ctx = await createTestApp({ ACCESS_TOKEN_TTL_SECONDS: String(365 * 86_400), NOTIFICATION_RETENTION_DAYS: '30', NOTIFICATION_FEED_MAX_WAITERS_PER_TENANT: '2' });
    world = await seedWorld(ctx);
  });
  after(() => ctx.close());
  beforeEach(async () => {
    await ctx.db.exec(`DELETE FROM deliveries; DELETE FROM events; DELETE FROM webhooks;`);
    hook = await insertWebhook(ctx.db, { tenantKind: 'seller', tenantId: '1', code: 'mine', topic: 'order/create' });
  });

  const send = async (reference: string, n: number, extra: Record<string, unknown> = {}) => {
    const response = await postEvent(ctx, world.headers.admin, sampleEvent('order/create', world, { event_id: `${reference}-${n}`, entity_id: reference, order: order(reference, { id: n, ...extra }) }));
    assert.equal(response.statusCode, 202);
  };
  const feed = (query = '', headers = world.headers.seller1, app: App = ctx.app) =>
    app.inject({ method: 'GET', url: `/v1/MKT/webhooks/mine/notifications${query}`, headers });
  const page = async (query = '') => {
    const response = await feed(query);
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as { items: FeedItem[]; next_cursor: string };
  };
  const deliveries = async () =>
    (await ctx.db.query<{ id: number; message_id: string; status: string; sequence: number }>(`SELECT id, message_id, status, sequence FROM deliveries WHERE webhook_id = $1 ORDER BY id`, [hook.id])).rows;

  test('pages through every notification in creation order; next_cursor is always a string', async () => {
    for (let i = 0; i < 7; i++) await send(i % 2 === 0 ? 'ORD-A' : 'ORD-B', i);
    const stored = await deliveries();
    const seen: FeedItem[] = [];
    let cursor: string | undefined;
    for (const size of [3, 3, 1]) {
      const answer = await page(`?limit=3${cursor ? `&after=${cursor}` : ''}`);
      assert.equal(answer.items.length, size);
      assert.equal(typeof answer.next_cursor, 'string');
      seen.push(...answer.items);
      cursor = answer.next_cursor;
    }
    assert.deepEqual(seen.map((item) => item.webhook_id), stored.map((row) => row.message_id));
    assert.deepEqual(seen.map((item) => [item.entity_id, item.sequence]), [['ORD-A', 1], ['ORD-B', 1], ['ORD-A', 2], ['ORD-B', 2], ['ORD-A', 3], ['ORD-B', 3], ['ORD-A', 4]]);
    assert.equal(seen[0]!.topic_path, 'order/MKT/create');
    assert.equal(seen[0]!.created_at, ctx.clock.now().toISOString());
    // The body exactly as stored (and sent): the same text.
    const { rows } = await ctx.db.query<{ body: string }>(`SELECT e.body::text AS body FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.id = $1`, [stored[0]!.id]);
    const raw = (await feed('?limit=1')).body;
    assert.ok(raw.includes(`"notification":${rows[0]!.body}}`), raw);

    // Nothing newer: no items, and the same position (the next notification comes next).
    const quiet = await page(`?after=${cursor}`);
    assert.deepEqual(quiet.items, []);
    assert.equal(typeof quiet.next_cursor, 'string');
    await send('ORD-C', 8);
    const newer = await page(`?after=${quiet.next_cursor}`);
    assert.deepEqual(newer.items.map((item) => item.entity_id), ['ORD-C']);
    // The old cursor names the same position.
    assert.deepEqual((await page(`?after=${cursor}`)).items.map((item) => item.entity_id), ['ORD-C']);
  });

  test('lists notifications whatever their delivery state, and reading changes nothing', async () => {
    for (let i = 0; i < 3; i++) await send('ORD-S', i);
    const [sent, failed] = await deliveries();
    await ctx.db.query(`UPDATE deliveries SET status = 'succeeded', completed_at = $2 WHERE id = $1`, [sent!.id, ctx.clock.now()]);
    await ctx.db.query(`UPDATE deliveries SET status = 'failed', completed_at = $2 WHERE id = $1`, [failed!.id, ctx.clock.now()]);
    // Paused: what arrives is held.
    await ctx.db.query(`UPDATE webhooks SET active = false, disabled_reason = 'disabled_by_user' WHERE id = $1`, [hook.id]);
    await send('ORD-S', 3);
    // Disabled by failures: the feed still lists everything created for it.
    await ctx.db.query(`UPDATE webhooks SET disabled_reason = 'failing_too_long' WHERE id = $1`, [hook.id]);
    const before = await deliveries();
    assert.deepEqual(before.map((row) => row.status), ['succeeded', 'failed', 'pending', 'held']);
    const answer = await page();
    assert.deepEqual(answer.items.map((item) => item.sequence), [1, 2, 3, 4]);
    assert.deepEqual(await deliveries(), before);
  });

  test('a page never passes over a delivery that an intake still in flight commits later with a smaller id', async () => {
    // An intake in flight: its delivery has an id, not committed yet (its foreign key holds the webhook FOR KEY SHARE).
    let commit!: () => void;
    const committed = new Promise<void>((resolve) => (commit = resolve));
    let inserted!: () => void;
    const insertedYet = new Promise<void>((resolve) => (inserted = resolve));
    const slow = ctx.db.transaction(async (tx) => {
      await seedDelivery(tx, { id: hook.id, secret: '', code: 'mine', marketplaceCode: 'MKT' }, { now: ctx.clock.now(), entityKey: 'MKT:1:SLOW' });
      inserted();
      await committed;
    });
    await insertedYet;
    // A later intake commits first, with a larger id.
    await send('ORD-FAST', 1);
    let answered = false;
    const reading = feed().then((response) => {
      answered = true;
      return response;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(answered, false, 'the feed answered while an earlier delivery was still being written');
    commit();
    await slow;
    const items = (await reading).json().items as FeedItem[];
    assert.deepEqual(items.map((item) => item.entity_id), ['MKT:1:SLOW', 'ORD-FAST']);
  });

  test('tenancy: another tenant\'s webhook is 404, as for the webhook itself', async () => {
    await send('ORD-T', 1);
    const webhook = await ctx.app.inject({ method: 'GET', url: '/v1/MKT/webhooks/mine', headers: world.headers.seller2 });
    const notifications = await feed('', world.headers.seller2);
    assert.equal(webhook.statusCode, 404);
    assert.equal(notifications.statusCode, 404);
    assert.equal(notifications.json().code, webhook.json().code);
    assert.equal(notifications.json().detail, webhook.json().detail);
    assert.equal((await feed('', world.headers.admin)).statusCode, 200);
  });

  test('limit is 1 to 500; a cursor not issued here is 400', async () => {
    for (const limit of ['0', '501', 'x']) {
      const response = await feed(`?limit=${limit}`);
      assert.equal(response.statusCode, 400, limit);
      assert.equal(response.json().code, 'validation_failed');
    }
    assert.equal((await feed('?limit=500')).statusCode, 200);
    assert.equal((await feed('?after=bm9wZQ')).json().code, 'validation_failed');
    assert.equal((await feed('?wait=31')).json().code, 'validation_failed');
  });

  test('a cursor older than the retention is 410 cursor_expired; one a consumer keeps polling does not expire', async () => {
    await send('ORD-R', 1);
    await send('ORD-R', 2);
    ctx.clock.advance(20 * DAY);
    // Read 20 days later, one at a time: what follows this cursor was created 20 days ago.
    const partial = await page('?limit=1');
    // Read to the end: nothing newer than this cursor existed when it was issued.
    const polled = await page();
    ctx.clock.advance(11 * DAY);
    const expired = await feed(`?after=${partial.next_cursor}`);
    assert.equal(expired.statusCode, 410);
    assert.equal(expired.json().code, 'cursor_expired');
    // Issued 11 days ago with nothing newer: still good, and polling gives it a new life.
    const repolled = await page(`?after=${polled.next_cursor}`);
    assert.deepEqual(repolled.items, []);
    ctx.clock.advance(25 * DAY);
    assert.equal((await feed(`?after=${repolled.next_cursor}`)).statusCode, 200);
    assert.equal((await feed(`?after=${polled.next_cursor}`)).statusCode, 410);
  });

  test('long poll: answers as soon as a notification arrives', async () => {
    await send('ORD-L', 1);
    const { next_cursor } = await page();
    const started = Date.now();
    const waiting = feed(`?after=${next_cursor}&wait=20`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await send('ORD-L', 2);
    const response = await waiting;
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json().items.map((item: FeedItem) => item.sequence), [2]);
    assert.ok(Date.now() - started < 5000, `answered after ${Date.now() - started} ms`);
    // Nothing arrives: the empty answer after the wait, with the same position.
    const quiet = Date.now();
    const empty = await feed(`?after=${response.json().next_cursor}&wait=1`);
    assert.deepEqual(empty.json().items, []);
    assert.ok(Date.now() - quiet >= 900);
  });

  test('readers of one webhook share their settles: 50 pages at once take its row lock a few times, not 50', async () => {
    const { db: counted, counts } = countedDatabase(ctx.db);
    // The first settle is held for a second, as an intake holding the webhook's row lock would hold
    // it, while the readers arrive: they arrive over the time each request's authentication takes,
    // which on a loaded host outlasted a settle (7 settles in a CI run; the bound is for readers
    // that arrive while one runs).
    let held = false;
    const db: Database = {
      ...counted,
      transaction: async (work) => {
        if (!held) {
          held = true;
          await new Promise((resolve) => setTimeout(resolve, 1000));
        }
        return counted.transaction(work);
      },
    };
    const app = await buildApp({ config: ctx.config, db, keys: ctx.keys, clock: ctx.clock, logger: false });
    try {
      await send('ORD-S', 1);
      const pages = await Promise.all(Array.from({ length: 50 }, () => feed('', world.headers.seller1, app)));
      for (const response of pages) assert.deepEqual(response.json().items.map((item: FeedItem) => item.entity_id), ['ORD-S']);
      // Each page's settle is the one transaction of a feed read.
      assert.ok(counts.transactions >= 1 && counts.transactions <= 5, `${counts.transactions} settles for 50 readers`);
    } finally {
      await app.close();
    }
  });

  test('long poll: waiting requests hold no database connection, and a tenant has a bounded number', async () => {
    // The same app over a database that counts the connections in use (a query or a transaction running).
    const { db, counts } = countedDatabase(ctx.db);
    const app = await buildApp({ config: ctx.config, db, keys: ctx.keys, clock: ctx.clock, logger: false });
    try {
      await send('ORD-W', 1);
      const { next_cursor } = (await feed('', world.headers.seller1, app)).json();
      const waiting = [feed(`?after=${next_cursor}&wait=20`, world.headers.seller1, app), feed(`?after=${next_cursor}&wait=20`, world.headers.seller1, app)];
      // Once both have read their (empty) page and wait: sampled over half a second, no connection in use.
      await new Promise((resolve) => setTimeout(resolve, 800));
      const samples: number[] = [];
      for (let i = 0; i < 5; i++) {
        samples.push(counts.inUse);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.deepEqual(samples, [0, 0, 0, 0, 0]);
      // A third waiter of the same tenant is refused.
      const third = await feed(`?after=${next_cursor}&wait=20`, world.headers.seller1, app);
      assert.equal(third.statusCode, 429);
      assert.equal(third.json().code, 'rate_limited');
      await send('ORD-W', 2);
      for (const response of await Promise.all(waiting)) assert.deepEqual(response.json().items.map((item: FeedItem) => item.sequence), [2]);
    } finally {
      await app.close();
    }
  });
});
