import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { MemoryTokenStore, PlazaApiError, PlazaClient, PlazaSession, verifyNotification, type Fetch, type OrderEvent } from '../src/index.js';
import { startPlaza, until, type LivePlaza } from './live-plaza.js';

type Schema = { $ref?: string; properties?: Record<string, Schema>; anyOf?: Schema[]; oneOf?: Schema[]; allOf?: Schema[] };
type Operation = { requestBody?: { content: Record<string, { schema: Schema }> }; responses: Record<string, { content?: Record<string, { schema: Schema }> }> };
type Document = { paths: Record<string, Record<string, Operation>>; components?: { schemas?: Record<string, Schema> } };

// Against a real Plaza (this repository's, started by live-plaza.ts): what the unit tests check
// against fakes, checked against the service itself. PLAZA_CLIENT_LIVE=0 skips them.
const skip = process.env.PLAZA_CLIENT_LIVE === '0' ? 'PLAZA_CLIENT_LIVE=0' : false;

describe('against a running Plaza', { skip }, () => {
  let plaza: LivePlaza;
  let admin: PlazaClient;
  let marketplaceKey: string;
  const password = randomBytes(18).toString('base64url');
  const received: { headers: IncomingHttpHeaders; body: string }[] = [];
  const receiver = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      received.push({ headers: request.headers, body });
      response.end('ok');
    });
  });
  let receiverUrl: string;

  /** fetch, counting the requests per path and status. */
  const counting = () => {
    const seen: string[] = [];
    const wrapped: Fetch = async (input, init) => {
      const response = await fetch(input, init);
      seen.push(`${init?.method ?? 'GET'} ${new URL(String(input)).pathname} ${response.status}`);
      return response;
    };
    return { seen, fetch: wrapped };
  };

  const order = (entity: string, eventId?: string): OrderEvent => ({
    ...(eventId ? { event_id: eventId } : {}),
    topic: 'order/status_change',
    seller_id: 42,
    entity_id: entity,
    order: { reference_order: entity, status: 'APRO' },
    state_from: null,
    state_to: 'APRO',
    author: 'client tests',
  });

  before(async () => {
    receiver.listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks`;
    // A tenant may post 3 events at once, then 1 per second: a 429 is easy to provoke.
    plaza = await startPlaza({ TENANT_EVENTS_PER_SECOND: '1', TENANT_EVENTS_BURST: '3' });
    admin = new PlazaClient({ baseUrl: plaza.url, apiKey: plaza.adminKey });
    await admin.request('POST', '/api/v2/admin/marketplaces', { body: { code: 'meli', name: 'Mercado Libre' } });
    await admin.request('POST', '/api/v2/admin/sellers', { body: { id: 42, name: 'Acme' } });
    await admin.request('POST', '/api/v2/admin/connections', { body: { seller_id: 42, marketplace_code: 'meli' } });
    await admin.request('POST', '/api/v2/admin/users', { body: { username: 'alice', password, seller_id: 42 } });
    const created = await admin.request<{ key: string }>('POST', '/api/v2/admin/api-keys', { body: { name: 'meli producer', role: 'marketplace', marketplace_code: 'meli' } });
    marketplaceKey = created.body.key;
    document = (await (await fetch(`${plaza.url}/openapi.json`)).json()) as Document;
  });
  after(async () => {
    receiver.close();
    await plaza?.stop();
  });

  test('a session: 30 calls at once after the access token expired make one refresh, and the session survives it', async () => {
    let now = Date.now();
    const { seen, fetch } = counting();
    const session = new PlazaSession({ baseUrl: plaza.url, fetch, now: () => now });
    const login = await session.login('alice', password);
    assert.equal(login.user_name, 'alice');
    assert.equal(login.expires_in, 900);
    const client = new PlazaClient({ baseUrl: plaza.url, fetch, session });
    now += 16 * 60 * 1000;
    const answers = await Promise.all(Array.from({ length: 30 }, () => client.request<unknown[]>('GET', '/api/v2/auth/sessions')));
    assert.ok(answers.every((answer) => answer.status === 200));
    assert.deepEqual(seen.filter((line) => line.includes('/auth/refresh')), ['POST /api/v2/auth/refresh 200']);
    // No reuse detected: the session is still open, and the refreshed token keeps working.
    assert.equal((await client.request<unknown[]>('GET', '/api/v2/auth/sessions')).body.length, 1);
  });

  test('a session: 30 calls refused with 401 (a token Plaza does not take) make one refresh and are made again', async () => {
    const { seen, fetch } = counting();
    const store = new MemoryTokenStore();
    const session = new PlazaSession({ baseUrl: plaza.url, fetch, store });
    await session.login('alice', password);
    store.save({ ...store.load()!, accessToken: 'eyJ.not-a-token' });
    const client = new PlazaClient({ baseUrl: plaza.url, fetch, session });
    const answers = await Promise.all(Array.from({ length: 30 }, () => client.request('GET', '/api/v2/auth/sessions')));
    assert.ok(answers.every((answer) => answer.status === 200));
    assert.equal(seen.filter((line) => line.endsWith('/api/v2/auth/sessions 401')).length, 30);
    assert.deepEqual(seen.filter((line) => line.includes('/auth/refresh')), ['POST /api/v2/auth/refresh 200']);
  });

  test('sendEvent with an API key: past the tenant limit, 429 with Retry-After, and the retries get every event in; the same event_id is one event', async () => {
    const impatient = new PlazaClient({ baseUrl: plaza.url, apiKey: marketplaceKey, retry: { maxRetries: 0 } });
    const outcomes = await Promise.allSettled(Array.from({ length: 6 }, (_, index) => impatient.sendEvent('meli', order(`ORD-BURST-${index}`))));
    const limited = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason as PlazaApiError] : []));
    assert.ok(limited.length > 0, 'the burst went past the limit');
    assert.ok(limited.every((error) => error.status === 429 && error.code === 'rate_limited' && error.retryAfterSeconds! >= 1), JSON.stringify(limited.map((error) => error.message)));

    const { seen, fetch } = counting();
    const producer = new PlazaClient({ baseUrl: plaza.url, apiKey: marketplaceKey, fetch });
    const accepted = await Promise.all(Array.from({ length: 4 }, (_, index) => producer.sendEvent('meli', order(`ORD-RETRIED-${index}`))));
    assert.equal(accepted.length, 4);
    assert.ok(seen.some((line) => line.endsWith(' 429')), seen.join('\n'));
    assert.equal(seen.filter((line) => line.endsWith(' 202')).length, 4);

    const first = await producer.sendEvent('meli', order('ORD-IDEM', 'idem-1'));
    assert.equal(first.event_id, 'idem-1');
    assert.deepEqual(await producer.sendEvent('meli', order('ORD-IDEM', 'idem-1')), first);
    await assert.rejects(producer.sendEvent('meli', { ...order('ORD-IDEM', 'idem-1'), author: 'someone else' }), (error) => error instanceof PlazaApiError && error.status === 409);
  });

  test('verifyNotification on notifications Plaza delivered, before and during a secret rotation; standardwebhooks agrees', async () => {
    const session = new PlazaSession({ baseUrl: plaza.url });
    await session.login('alice', password);
    const seller = new PlazaClient({ baseUrl: plaza.url, session });
    const { body: webhook } = await seller.request<{ secret: string }>('POST', '/v1/meli/webhooks', {
      body: { code: 'verified', name: 'Verified receiver', topic: 'order/status_change/APRO', callback_url: receiverUrl },
    });
    const previous = webhook.secret;
    await seller.sendEvent('meli', order('ORD-SIGNED-1'));
    await until(() => received.some((notification) => notification.body.includes('ORD-SIGNED-1')), 30_000);
    const first = received.find((notification) => notification.body.includes('ORD-SIGNED-1'))!;
    const verified = verifyNotification<{ entity_id: string; topic_path: string }>({ secret: previous, headers: first.headers, body: first.body });
    assert.equal(verified.payload.entity_id, 'ORD-SIGNED-1');
    assert.equal(verified.payload.topic_path, 'order/meli/status_changed/entered_APRO');
    assert.equal(verified.id, first.headers['webhook-id']);
    new Webhook(previous).verify(first.body, first.headers as Record<string, string>);
    assert.throws(() => verifyNotification({ secret: previous, headers: first.headers, body: first.body.replace('ORD-SIGNED-1', 'ORD-SIGNED-X') }));
    assert.throws(() => verifyNotification({ secret: previous, headers: first.headers, body: first.body, now: Date.now() + 10 * 60 * 1000 }));

    const { body: rotated } = await seller.request<{ secret: string }>('POST', '/v1/meli/webhooks/verified/rotate-secret');
    await seller.sendEvent('meli', order('ORD-SIGNED-2'));
    await until(() => received.some((notification) => notification.body.includes('ORD-SIGNED-2')), 30_000);
    const second = received.find((notification) => notification.body.includes('ORD-SIGNED-2'))!;
    assert.equal(String(second.headers['webhook-signature']).split(' ').length, 2, 'signed with both secrets during the overlap');
    for (const secret of [previous, rotated.secret, [rotated.secret, previous]]) {
      assert.equal(verifyNotification<{ entity_id: string }>({ secret, headers: second.headers, body: second.body }).payload.entity_id, 'ORD-SIGNED-2');
    }
    new Webhook(rotated.secret).verify(second.body, second.headers as Record<string, string>);
    assert.throws(() => verifyNotification({ secret: `whsec_${randomBytes(24).toString('base64')}`, headers: second.headers, body: second.body }));
  });

  test('the notification feed, read with the iterator', async () => {
    // The feed has the webhook's own tenancy: alice (seller 1) made 'verified'; the marketplace's key gets 404, as for the webhook.
    const outsider = new PlazaClient({ baseUrl: plaza.url, apiKey: marketplaceKey });
    await assert.rejects(outsider.notificationPage('meli', 'verified', undefined, 1), (error) => error instanceof PlazaApiError && error.status === 404);
    const session = new PlazaSession({ baseUrl: plaza.url });
    await session.login('alice', password);
    const reader = new PlazaClient({ baseUrl: plaza.url, session });
    const feed = reader.notifications('meli', 'verified', { limit: 1 });
    const items = [];
    for await (const item of feed) items.push(item);
    assert.ok(items.length >= 2, JSON.stringify(items));
    const text = JSON.stringify(items);
    assert.ok(text.includes('ORD-SIGNED-1') && text.includes('ORD-SIGNED-2'), text);
    assert.ok(feed.cursor, 'a cursor to persist');
    // From the persisted cursor: nothing newer (Plaza's next_cursor is always a string, so nothing is read twice).
    const again = [];
    for await (const item of reader.notifications('meli', 'verified', { after: feed.cursor!, limit: 1 })) again.push(item);
    assert.equal(again.length, 0, JSON.stringify(again));
  });

  // The hand-written types of src/types.ts, held to the OpenAPI document the service serves.
  let document: Document;
  const resolve = (schema: Schema): Schema => (schema.$ref ? resolve(document.components!.schemas![schema.$ref.split('/').at(-1)!]!) : schema);
  /** Every property name of a schema, through $ref, allOf, anyOf and oneOf. */
  const properties = (schema: Schema): Set<string> => {
    const resolved = resolve(schema);
    const names = new Set(Object.keys(resolved.properties ?? {}));
    for (const part of [...(resolved.allOf ?? []), ...(resolved.anyOf ?? []), ...(resolved.oneOf ?? [])]) for (const name of properties(part)) names.add(name);
    return names;
  };
  const response = (path: string, method: string, status: string) => document.paths[path]![method]!.responses[status]!.content!['application/json']!.schema;

  test('openapi: the login and refresh result', () => {
    const fields = ['token', 'refresh_token', 'user_id', 'user_name', 'seller_id', 'expires_in', 'token_type'];
    assert.deepEqual([...properties(response('/api/v2/auth/login', 'post', '200'))].sort(), [...fields].sort());
    assert.deepEqual([...properties(response('/api/v2/auth/refresh', 'post', '200'))].sort(), [...fields].sort());
  });

  test('openapi: the event intake, its body fields and its 202', () => {
    const body = document.paths['/v1/{marketplace_code}/events']!.post!.requestBody!.content['application/json']!.schema;
    const ours = ['event_id', 'topic', 'seller_id', 'entity_id', 'marketplace_connection_id', 'publication', 'changes', 'order', 'state_from', 'state_to', 'author'];
    assert.deepEqual([...properties(body)].sort(), [...ours].sort());
    assert.deepEqual([...properties(response('/v1/{marketplace_code}/events', 'post', '202'))].sort(), ['deliveries', 'event_id', 'unchanged']);
  });
});
