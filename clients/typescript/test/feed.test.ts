import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PlazaClient } from '../src/index.js';
import { fakeServer, json } from './fake-server.js';

/** A feed of 7 items, served `limit` at a time after a cursor that is the last id given. */
async function feedServer(total: number) {
  let items = Array.from({ length: total }, (_, index) => ({ id: index + 1, body: { entity_id: `ORD-${index + 1}` } }));
  const server = await fakeServer((request, response) => {
    if (request.url.pathname !== '/v1/meli/webhooks/orders/notifications') return json(response, 404, { code: 'not_found' });
    const after = Number(request.url.searchParams.get('after') ?? '0');
    const limit = Number(request.url.searchParams.get('limit') ?? '3');
    const page = items.filter((item) => item.id > after).slice(0, limit);
    json(response, 200, { items: page, next_cursor: page.length > 0 ? String(page.at(-1)!.id) : request.url.searchParams.get('after') });
  });
  return { server, add: (count: number) => (items = [...items, ...Array.from({ length: count }, (_, index) => ({ id: items.length + index + 1, body: { entity_id: 'x' } }))]) };
}

test('the iterator walks every page in order and ends at the first empty page; the cursor resumes where it stopped', async () => {
  const { server, add } = await feedServer(7);
  try {
    const client = new PlazaClient({ baseUrl: server.url, apiKey: 'plz_test' });
    const feed = client.notifications<{ id: number }>('meli', 'orders', { limit: 3 });
    const seen: number[] = [];
    for await (const item of feed) seen.push(item.id);
    assert.deepEqual(seen, [1, 2, 3, 4, 5, 6, 7]);
    assert.equal(feed.cursor, '7');
    assert.deepEqual(server.requests.map((request) => request.url.search), ['?limit=3', '?after=3&limit=3', '?after=6&limit=3', '?after=7&limit=3']);
    assert.ok(server.requests.every((request) => request.headers.authorization === 'Bearer plz_test'));

    // A consumer that persisted the cursor starts again from it and sees only what came since.
    add(2);
    const resumed: number[] = [];
    for await (const item of client.notifications<{ id: number }>('meli', 'orders', { after: feed.cursor!, limit: 3 })) resumed.push(item.id);
    assert.deepEqual(resumed, [8, 9]);
  } finally {
    await server.close();
  }
});

test('the cursor moves only once a page is processed: stopping mid-page resumes at that page (at least once)', async () => {
  const { server } = await feedServer(7);
  try {
    const client = new PlazaClient({ baseUrl: server.url, apiKey: 'plz_test' });
    const feed = client.notifications<{ id: number }>('meli', 'orders', { limit: 3 });
    const cursors: (string | undefined)[] = [];
    for await (const item of feed) {
      cursors.push(feed.cursor);
      if (item.id === 5) break;
    }
    assert.deepEqual(cursors, [undefined, undefined, undefined, '3', '3']);
    const again: number[] = [];
    for await (const item of client.notifications<{ id: number }>('meli', 'orders', { after: feed.cursor!, limit: 3 })) again.push(item.id);
    assert.deepEqual(again, [4, 5, 6, 7]);
  } finally {
    await server.close();
  }
});

test('follow: keeps polling from the last cursor until the signal aborts', async () => {
  const { server, add } = await feedServer(2);
  try {
    const client = new PlazaClient({ baseUrl: server.url, apiKey: 'plz_test' });
    const controller = new AbortController();
    const seen: number[] = [];
    let polls = 0;
    const feed = client.notifications<{ id: number }>('meli', 'orders', { follow: true, pollIntervalMs: 5, signal: controller.signal });
    for await (const item of feed) {
      seen.push(item.id);
      if (item.id === 2) {
        // The next item comes once the drained feed has been asked three more times.
        polls = server.requests.length;
        const timer = setInterval(() => {
          if (server.requests.length < polls + 3) return;
          clearInterval(timer);
          add(1);
        }, 1);
      }
      if (item.id === 3) controller.abort();
    }
    assert.deepEqual(seen, [1, 2, 3]);
    assert.ok(server.requests.length >= polls + 4, 'it polled while the feed was drained');
    assert.equal(feed.cursor, '3');
  } finally {
    await server.close();
  }
});

test('a last page without next_cursor ends the iteration, also when following: there is no position after it', async () => {
  const server = await fakeServer((request, response) => {
    const after = request.url.searchParams.get('after');
    json(response, 200, after === null ? { items: [{ id: 1 }, { id: 2 }], next_cursor: 'c2' } : { items: [{ id: 3 }], next_cursor: null });
  });
  try {
    const client = new PlazaClient({ baseUrl: server.url, apiKey: 'plz_test' });
    const feed = client.notifications<{ id: number }>('meli', 'orders', { follow: true, pollIntervalMs: 1 });
    const seen: number[] = [];
    for await (const item of feed) seen.push(item.id);
    assert.deepEqual(seen, [1, 2, 3]);
    assert.equal(server.requests.length, 2);
    assert.equal(feed.cursor, 'c2');
  } finally {
    await server.close();
  }
});
