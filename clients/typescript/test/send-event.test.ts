import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PlazaApiError, PlazaClient, parseRetryAfter } from '../src/index.js';
import { fakeServer, json } from './fake-server.js';

const order = { topic: 'order/status_change', seller_id: 42, entity_id: 'ORD-1', order: { reference_order: 'ORD-1' }, state_to: 'APRO', author: 'test' } as const;

test('sendEvent retries 503 and 429 after Retry-After, with the same event_id each time, and returns the 202', async () => {
  const answers = [
    [503, { code: 'service_unavailable' }, { 'retry-after': '2' }],
    [429, { code: 'rate_limited', retry_after: 1 }, { 'retry-after': '1' }],
    [202, { event_id: 'x', deliveries: 3 }, {}],
  ] as const;
  const server = await fakeServer((request, response) => {
    const [status, body, headers] = answers[server.requests.length - 1]!;
    json(response, status, status === 202 ? { ...body, event_id: (JSON.parse(request.body) as { event_id: string }).event_id } : body, headers);
  });
  const waits: number[] = [];
  try {
    const client = new PlazaClient({ baseUrl: server.url, apiKey: 'plz_test', sleep: async (ms) => void waits.push(ms) });
    const accepted = await client.sendEvent('meli', order);
    assert.equal(accepted.deliveries, 3);
    assert.deepEqual(waits, [2000, 1000]);
    const ids = server.requests.map((request) => (JSON.parse(request.body) as { event_id: string }).event_id);
    assert.equal(ids.length, 3);
    assert.equal(new Set(ids).size, 1, 'one idempotency key for every retry');
    assert.match(ids[0]!, /^[0-9a-f-]{36}$/);
    assert.equal(accepted.event_id, ids[0]);
    assert.ok(server.requests.every((request) => request.headers.authorization === 'Bearer plz_test' && request.url.pathname === '/v1/meli/events'));
  } finally {
    await server.close();
  }
});

test('sendEvent keeps the event_id it is given; gives up after maxRetries, or at once when Retry-After is longer than maxDelayMs', async () => {
  const server = await fakeServer((_request, response) => json(response, 503, { code: 'service_unavailable', title: 'down' }, { 'retry-after': '1' }));
  try {
    const waits: number[] = [];
    const client = new PlazaClient({ baseUrl: server.url, apiKey: 'plz_test', retry: { maxRetries: 2 }, sleep: async (ms) => void waits.push(ms) });
    const error = await client.sendEvent('meli', { ...order, event_id: 'mine-1' }).catch((error: unknown) => error);
    assert.ok(error instanceof PlazaApiError);
    assert.equal(error.status, 503);
    assert.equal(error.retryAfterSeconds, 1);
    assert.equal(server.requests.length, 3);
    assert.deepEqual(waits, [1000, 1000]);
    assert.ok(server.requests.every((request) => (JSON.parse(request.body) as { event_id: string }).event_id === 'mine-1'));

    const impatient = new PlazaClient({ baseUrl: server.url, apiKey: 'plz_test', retry: { maxDelayMs: 500 }, sleep: async () => assert.fail('no wait') });
    const refused = await impatient.sendEvent('meli', order).catch((error: unknown) => error);
    assert.ok(refused instanceof PlazaApiError && refused.status === 503);
    assert.equal(server.requests.length, 4);
  } finally {
    await server.close();
  }
});

test('a 400 is not retried and carries the problem', async () => {
  const server = await fakeServer((_request, response) => json(response, 400, { code: 'validation_failed', errors: [{ field: 'body.author', message: 'is required' }] }));
  try {
    const client = new PlazaClient({ baseUrl: server.url, apiKey: 'plz_test', sleep: async () => assert.fail('no retry') });
    const error = await client.sendEvent('meli', order).catch((error: unknown) => error);
    assert.ok(error instanceof PlazaApiError);
    assert.equal(error.code, 'validation_failed');
    assert.deepEqual(error.problem?.errors, [{ field: 'body.author', message: 'is required' }]);
    assert.equal(server.requests.length, 1);
  } finally {
    await server.close();
  }
});

test('Retry-After as seconds or as an HTTP date', () => {
  assert.equal(parseRetryAfter('7'), 7);
  assert.equal(parseRetryAfter(new Date(Date.UTC(2026, 0, 1, 0, 0, 30)).toUTCString(), Date.UTC(2026, 0, 1)), 30);
  assert.equal(parseRetryAfter(null), undefined);
  assert.equal(parseRetryAfter('soon'), undefined);
});
