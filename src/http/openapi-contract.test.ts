import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { projectRoot } from '../paths.js';
import { accessTokenFor, bearer, seedUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';

interface Operation {
  operationId?: string;
  security?: unknown[];
  parameters?: { name: string; in: string; required?: boolean }[];
  responses: Record<string, { headers?: Record<string, unknown> }>;
}

const REDOCLY = join(projectRoot, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');

describe('the OpenAPI document', () => {
  let ctx: TestContext;
  let document: { paths: Record<string, Record<string, Operation>> };
  const dir = mkdtempSync(join(tmpdir(), 'plaza-openapi-'));
  before(async () => {
    ctx = await createTestApp();
    document = (await ctx.app.inject({ url: '/openapi.json' })).json();
  });
  after(async () => {
    await ctx.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const operations = () => Object.entries(document.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method, op })));

  test('passes `redocly lint` with the recommended-strict rules: 0 errors, 0 warnings', () => {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(document));
    const result = spawnSync(process.execPath, [REDOCLY, 'lint', file, '--extends', 'recommended-strict', '--format', 'json'], {
      encoding: 'utf8',
      // Offline: no telemetry, no update check.
      env: { PATH: process.env.PATH ?? '', HOME: dir, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', CI: 'true' },
      timeout: 90_000,
      maxBuffer: 32 * 1024 * 1024,
    });
    const output = JSON.parse(result.stdout.slice(result.stdout.indexOf('{'))) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; message: string }[] };
    assert.deepEqual(output.problems.map((p) => `${p.ruleId}: ${p.message}`), []);
    assert.equal(output.totals.errors, 0);
    assert.equal(result.status, 0, result.stderr);
  });

  test('every operation has a unique operationId', () => {
    const ids = operations().map(({ op }) => op.operationId);
    assert.ok(ids.every(Boolean), 'no operation without operationId');
    assert.equal(new Set(ids).size, ids.length);
    assert.ok(ids.includes('createWebhook') && ids.includes('postEvent') && ids.includes('login'));
  });

  test('the headers Plaza sends are declared', () => {
    for (const { path, method, op } of operations()) {
      for (const [status, response] of Object.entries(op.responses)) {
        assert.ok(response.headers?.['X-Request-Id'], `${method} ${path} ${status}: X-Request-Id`);
        if (status === '429' || status === '503') assert.ok(response.headers?.['Retry-After'], `${method} ${path} ${status}: Retry-After`);
        // The challenge comes where a bearer credential is taken, or a DPoP proof (login and
        // refresh take their credential in the body, and may refuse a proof with a DPoP challenge).
        const takesProof = (op.parameters ?? []).some((p) => p.in === 'header' && p.name.toLowerCase() === 'dpop');
        if (status === '401') assert.equal(Boolean(response.headers?.['WWW-Authenticate']), (op.security ?? []).length > 0 || takesProof, `${method} ${path} ${status}: WWW-Authenticate`);
      }
    }
    assert.ok(document.paths['/v1/{marketplace_code}/webhooks']!.post!.responses['201']!.headers!.Location);
    assert.ok(document.paths['/v1/{marketplace_code}/webhooks']!.get!.responses['200']!.headers!.Link);
    assert.ok(document.paths['/v1/{marketplace_code}/webhooks/{code}/deliveries']!.get!.responses['200']!.headers!.Link);
  });

  test('413, 415, 429 and 503 are declared where they can happen', () => {
    const events = document.paths['/v1/{marketplace_code}/events']!.post!.responses;
    for (const status of ['413', '415', '429', '503']) assert.ok(events[status], `events ${status}`);
    for (const path of ['/v1/{marketplace_code}/webhooks/{code}/deliveries/{id}/retry', '/v1/{marketplace_code}/webhooks/{code}/replay', '/v1/{marketplace_code}/webhooks/{code}/test']) {
      assert.ok(document.paths[path]!.post!.responses['429'], `${path} 429`);
    }
    for (const { path, method, op } of operations()) if (path !== '/healthz') assert.ok(op.responses['503'], `${method} ${path} 503`);
    // A body can come with every POST, PUT, PATCH and DELETE, whether the route takes one or not.
    for (const { path, method, op } of operations()) {
      if (['post', 'put', 'patch', 'delete'].includes(method)) for (const status of ['413', '415']) assert.ok(op.responses[status], `${method} ${path} ${status}`);
    }
    // Every route checks its query string (a NUL is 400 anywhere); a path parameter can be too long (414).
    for (const { path, method, op } of operations()) {
      assert.ok(op.responses['400'], `${method} ${path} 400`);
      if (path.includes('{')) assert.ok(op.responses['414'], `${method} ${path} 414`);
      // The HTTP parser's own refusals (writeClientProblem), before any route: on every one.
      for (const status of ['408', '431']) assert.ok(op.responses[status], `${method} ${path} ${status}`);
    }
  });

  test('answers that come from outside a route\'s own schema are declared: a body where none is taken, an API key where a user is needed, refused input, a path segment too long', async () => {
    const user = await seedUser(ctx.db, { role: 'admin' });
    const token = bearer(await accessTokenFor(ctx, user));
    const asText = { ...token, 'content-type': 'text/plain' };
    const { key } = (await ctx.app.inject({ method: 'POST', url: '/api/v2/admin/api-keys', headers: token, payload: { name: 'contract', role: 'admin' } })).json() as { key: string };
    const cases = [
      { method: 'POST', url: '/api/v2/auth/logout', path: '/api/v2/auth/logout', headers: asText, status: 415 },
      { method: 'DELETE', url: '/api/v2/admin/sellers/1', path: '/api/v2/admin/sellers/{id}', headers: asText, status: 415 },
      { method: 'GET', url: '/api/v2/auth/sessions', path: '/api/v2/auth/sessions', headers: { authorization: `Bearer ${key}` }, status: 403 },
      { method: 'GET', url: '/healthz?probe=%00', path: '/healthz', headers: {}, status: 400 },
      { method: 'GET', url: '/v1/MKT/webhooks/a%20b', path: '/v1/{marketplace_code}/webhooks/{code}', headers: token, status: 400 },
      { method: 'POST', url: '/v1/MKT/webhooks/hook/rotate-secret', path: '/v1/{marketplace_code}/webhooks/{code}/rotate-secret', headers: { ...token, 'content-type': 'application/json' }, status: 400 },
      { method: 'GET', url: `/v1/MKT/webhooks/${'a'.repeat(150)}`, path: '/v1/{marketplace_code}/webhooks/{code}', headers: token, status: 414 },
    ] as const;
    for (const { method, url, path, headers, status } of cases) {
      const response = await ctx.app.inject({ method, url, headers, payload: method === 'GET' ? undefined : 'x' });
      assert.equal(response.statusCode, status, `${method} ${url}: ${response.body}`);
      assert.ok(document.paths[path]![method.toLowerCase()]!.responses[String(status)], `${method} ${path} declares ${status}`);
    }
  });

  test('DPoP: the scheme, the proof header of login and refresh, token_type, and every bearer operation also taking a DPoP-bound token', () => {
    const doc = document as unknown as { components: { securitySchemes: Record<string, { type: string; scheme: string }>; schemas?: unknown } };
    assert.deepEqual({ type: doc.components.securitySchemes.dpopAuth!.type, scheme: doc.components.securitySchemes.dpopAuth!.scheme }, { type: 'http', scheme: 'DPoP' });
    for (const path of ['/api/v2/auth/login', '/api/v2/auth/refresh']) {
      const op = document.paths[path]!.post! as Operation & { responses: Record<string, { content?: Record<string, { schema: { properties: Record<string, { enum?: string[] }> } }> }> };
      assert.ok(op.parameters?.some((p) => p.in === 'header' && p.name === 'dpop' && !p.required), `${path} DPoP header`);
      const tokenType = op.responses['200']!.content!['application/json']!.schema.properties.token_type!;
      assert.deepEqual(tokenType.enum, ['Bearer', 'DPoP']);
    }
    for (const { path, method, op } of operations()) {
      const schemes = (op.security ?? []).flatMap((entry) => Object.keys(entry as object));
      if (schemes.includes('bearerAuth')) assert.ok(schemes.includes('dpopAuth'), `${method} ${path}: dpopAuth`);
    }
  });

  test('limit on /api/v2/products is optional, as it is', async () => {
    const limit = document.paths['/api/v2/products']!.get!.parameters!.find((p) => p.name === 'limit');
    assert.equal(limit?.required ?? false, false);
  });
});
