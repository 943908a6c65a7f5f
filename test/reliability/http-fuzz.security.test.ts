import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { migrate } from '../../src/db/migrate.js';
import { createFreshDatabase, type FreshDatabase } from '../../src/testing/fresh-database.js';
import { conforming, deeplyNested, hostileObject, RAW_BODIES, type JsonSchema, type OpenApiDocument, type Operation } from '../../src/testing/openapi-arbitraries.js';
import { call, createWebhook, inParallel, login, orderEvent, report, scaled, seedTenant, sendEvent, type ApiResponse, type CallOptions } from '../../src/testing/plaza-api.js';
import { killAllPlaza, sharedKeyEnv, startPlaza, type PlazaProcess } from '../../src/testing/plaza-process.js';

const SEED = Number(process.env.PLAZA_FUZZ_SEED ?? Date.now() % 2 ** 31);
const PER_OPERATION = scaled(80);

let database: FreshDatabase;
let plaza: PlazaProcess;
let doc: OpenApiDocument;
const tokens: Record<string, string> = {};
const known: Record<string, string> = { marketplace_code: 'MKT', code: 'fz-hook' };

before(async () => {
  database = await createFreshDatabase();
  await migrate(database.db);
  const seller = await seedTenant(database.db, { sellerId: 1, marketplaceCode: 'MKT' });
  const admin = await seedTenant(database.db, { sellerId: 1, marketplaceCode: 'MKT', role: 'admin' });
  // The API alone: fuzzing the HTTP surface, not sending to whatever callback the fuzzer invents.
  plaza = await startPlaza({ DATABASE_URL: database.url, ...sharedKeyEnv() }, { role: 'api' });
  tokens.seller = (await login(plaza.url, seller.username, seller.password)).token;
  tokens.admin = (await login(plaza.url, admin.username, admin.password)).token;
  await createWebhook(plaza.url, tokens.seller, 'MKT', { code: 'fz-hook', topic: 'order/update', callback_url: 'https://hooks.example.com/fz' });
  assert.equal((await sendEvent(plaza.url, tokens.seller, 'MKT', orderEvent(1, 'FZ-1', 1))).status, 202);
  known.id = String((await database.db.query<{ id: string }>(`SELECT id::text FROM deliveries LIMIT 1`)).rows[0]!.id);
  doc = (await call(plaza.url, 'GET', '/openapi.json')).json as OpenApiDocument;
});
after(async () => {
  await killAllPlaza();
  await database?.drop();
});

interface FuzzRequest {
  method: string;
  path: string;
  options: CallOptions;
  label: string;
}

const hostileSegment = fc.oneof(
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }).map(encodeURIComponent),
  fc.constantFrom('%00', '%ZZ', '%', '..%2F..%2Fetc', '%2e%2e', 'a%0d%0aX-Injected:%201', '0', '-1', '1e9', '99999999999999999999', 'null', '%F0%9F%A6%84', '%C0%AF', '*'),
  fc.nat({ max: 10_000 }).map((n) => 'a'.repeat(n + 1)),
);

function requestsFor(method: string, path: string, operation: Operation): fc.Arbitrary<FuzzRequest> {
  const pathParams = (operation.parameters ?? []).filter((p) => p.in === 'path');
  const queryParams = (operation.parameters ?? []).filter((p) => p.in === 'query');
  const bodySchema = operation.requestBody?.content?.['application/json']?.schema;
  const segment = (name: string, schema: JsonSchema | undefined) =>
    fc.oneof(
      { weight: 3, arbitrary: fc.constant(known[name] ?? '1') },
      conforming(schema, doc).map((v) => encodeURIComponent(String(v))),
      hostileSegment,
    );
  const query = fc
    .tuple(
      fc.record(Object.fromEntries(queryParams.map((p) => [p.name, fc.oneof(conforming(p.schema, doc), fc.string({ maxLength: 30 }), fc.constantFrom('-1', '0', '1e309', '', 'x'.repeat(5000)))])), { requiredKeys: [] }),
      fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 2 }),
    )
    .map(([known, extra]) => {
      const search = new URLSearchParams();
      for (const [name, value] of Object.entries({ ...extra, ...known })) search.append(name, typeof value === 'string' ? value : JSON.stringify(value));
      const text = search.toString();
      return text ? `?${text}` : '';
    });
  const body = bodySchema ? fc.option(hostileObject(bodySchema, doc), { freq: 8 }) : fc.option(fc.jsonValue({ maxDepth: 2 }), { freq: 3 });
  return fc
    .record({
      params: fc.tuple(...pathParams.map((p) => segment(p.name, p.schema))),
      query,
      body,
      token: fc.constantFrom(tokens.seller, tokens.admin, tokens.seller, undefined, 'not.a.token'),
    })
    .map(({ params, query, body, token }) => {
      let url = path;
      pathParams.forEach((p, i) => (url = url.replace(`{${p.name}}`, String(params[i]))));
      return {
        method,
        path: `${url}${query}`,
        // fetch sends no body with GET (nor do most clients).
        options: { ...(token ? { token } : {}), ...(body === null || method === 'GET' ? {} : { body }) },
        label: `${method} ${path} generated`,
      };
    });
}

function handMade(method: string, path: string, operation: Operation): FuzzRequest[] {
  const url = path.replace(/\{(\w+)\}/g, (_, name: string) => known[name] ?? '1');
  const requests: FuzzRequest[] = [];
  const sample = operation.requestBody?.content?.['application/json']?.schema ? (fc.sample(conforming(operation.requestBody.content['application/json'].schema, doc), { numRuns: 1, seed: SEED })[0] as Record<string, unknown>) : {};
  for (const raw of method === 'GET' ? [] : RAW_BODIES) {
    requests.push({ method, path: url, options: { token: tokens.seller!, rawBody: raw.body, ...(raw.contentType ? { contentType: raw.contentType } : {}) }, label: `${method} ${path} ${raw.name}` });
  }
  // Deep nesting inside every field of a valid-looking body (order, headers, name…).
  for (const field of Object.keys((operation.requestBody?.content?.['application/json']?.schema?.properties ?? {}) as object)) {
    requests.push({ method, path: url, options: { token: tokens.admin!, rawBody: deeplyNested(10_000, 'object', { body: sample ?? {}, field }), contentType: 'application/json' }, label: `${method} ${path} 10 000 levels in ${field}` });
    requests.push({ method, path: url, options: { token: tokens.admin!, rawBody: deeplyNested(500, 'array', { body: sample ?? {}, field }), contentType: 'application/json' }, label: `${method} ${path} 500 levels in ${field}` });
  }
  // A NUL byte in each path parameter (PostgreSQL refuses it in text).
  for (const name of (operation.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name)) {
    const withNul = path.replace(`{${name}}`, 'a%00b').replace(/\{(\w+)\}/g, (_, other: string) => known[other] ?? '1');
    requests.push({ method, path: withNul, options: { token: tokens.admin!, ...(method === 'GET' || method === 'DELETE' ? {} : { body: sample ?? {} }) }, label: `${method} ${path} NUL in ${name}` });
  }
  // Integers past what a PostgreSQL integer column holds, in every integer field of the body.
  const properties = (operation.requestBody?.content?.['application/json']?.schema?.properties ?? {}) as Record<string, JsonSchema>;
  for (const [field, schema] of Object.entries(properties)) {
    const types = [schema.type, ...(schema.anyOf ?? []).map((s) => s.type)].flat();
    if (!types.includes('integer')) continue;
    for (const big of ['2147483648', '9007199254740993', '1e300']) {
      requests.push({ method, path: url, options: { token: tokens.admin!, rawBody: JSON.stringify({ ...sample, [field]: '__BIG__' }).replace('"__BIG__"', big), contentType: 'application/json' }, label: `${method} ${path} ${field}=${big}` });
    }
  }
  // Methods the path does not have.
  for (const other of ['PUT', 'PATCH', 'DELETE', 'POST', 'GET', 'OPTIONS']) {
    if (!(other.toLowerCase() in doc.paths[path]!) && !(other === 'GET' && path.endsWith('/webhooks'))) requests.push({ method: other, path: url, options: { token: tokens.seller! }, label: `${other} ${path} (not a method of the path)` });
  }
  return requests;
}

/** What a response must look like: never 5xx, and every error as RFC 9457 problem+json with our members. */
function violations(request: FuzzRequest, response: ApiResponse): string | undefined {
  if (response.status >= 500) return `${response.status} ${response.text.slice(0, 300)}`;
  if (response.status < 400) return undefined;
  if (request.method === 'HEAD') return undefined;
  const type = response.headers.get('content-type') ?? '';
  if (!type.startsWith('application/problem+json')) return `error ${response.status} as ${type}`;
  const body = response.json as Record<string, unknown> | undefined;
  if (!body) return `error ${response.status} with a body that is not JSON`;
  for (const member of ['type', 'title', 'detail', 'code', 'request_id']) if (typeof body[member] !== 'string' || body[member] === '') return `problem without ${member}: ${response.text.slice(0, 300)}`;
  if (body.status !== response.status) return `problem status ${String(body.status)} on a ${response.status}`;
  return undefined;
}

test('HTTP fuzzing of every endpoint of /openapi.json: no 5xx, every error valid problem+json', { timeout: 600_000 }, async () => {
  const requests: FuzzRequest[] = [];
  let index = 0;
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      requests.push(...fc.sample(requestsFor(method.toUpperCase(), path, operation), { numRuns: PER_OPERATION, seed: SEED + index++ }));
      requests.push(...handMade(method.toUpperCase(), path, operation));
    }
  }
  requests.push({ method: 'GET', path: '/no/such/route', options: {}, label: 'unknown route' }, { method: 'POST', path: `/v1/${'x'.repeat(20_000)}/webhooks`, options: { body: {} }, label: 'huge path' });

  const failures = new Map<string, string>();
  const statuses = new Map<number, number>();
  await inParallel(requests, 4, async (request) => {
    let response: ApiResponse;
    try {
      response = await call(plaza.url, request.method, request.path, { ...request.options, timeoutMs: 30_000 });
    } catch (error) {
      const cause = String((error as Error).cause ?? error);
      // A body larger than the route's limit is answered 413 from its Content-Length, before it is
      // read; the server then closes the connection, and a client still writing the rest of a
      // 2 MiB body may see EPIPE instead of the 413. Refusing to read it is the point.
      if (request.label.includes('oversized') && /EPIPE|ECONNRESET/.test(cause)) return;
      failures.set(request.label, `no answer: ${cause}`);
      return;
    }
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    const problem = violations(request, response);
    if (problem && !failures.has(request.label)) failures.set(request.label, `${problem}\n    path: ${request.path.slice(0, 200)}\n    body: ${JSON.stringify(request.options.body ?? request.options.rawBody?.toString().slice(0, 200))?.slice(0, 300)}`);
  });
  const ready = await call(plaza.url, 'GET', '/readyz');
  assert.equal(ready.status, 200, 'the server is still up');
  const fiveXx = [...statuses].filter(([status]) => status >= 500).reduce((n, [, count]) => n + count, 0);
  report('HTTP fuzzing', { seed: SEED, requests: requests.length, fiveXx, badProblemBodies: failures.size, statuses: Object.fromEntries([...statuses].sort(([a], [b]) => a - b)) });
  assert.ok(requests.length >= 2000 || PER_OPERATION < 80, `at least 2 000 requests (${requests.length})`);
  assert.deepEqual([...failures].map(([label, problem]) => `${label}: ${problem}`), [], `seed ${SEED}`);
});
