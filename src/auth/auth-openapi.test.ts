import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';

interface Media { example?: unknown; examples?: Record<string, { value: Record<string, unknown> }>; schema?: unknown }
interface Operation {
  description?: string;
  parameters?: { name: string; in: string; example?: unknown }[];
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, { content?: Record<string, Media> }>;
}

/**
 * The OpenAPI document shows each authentication flow with an example, as docs/authentication.md
 * does (issue 32): the login result and its DPoP form, the 401s of a second factor, enrolment and
 * recovery codes, a refused DPoP proof, a refused password, API keys with expiry and their maker.
 * `redocly lint` (openapi-contract.test.ts) checks each example against its schema.
 */
describe('authentication flows in the OpenAPI document have examples', () => {
  let ctx: TestContext;
  let paths: Record<string, Record<string, Operation>>;
  before(async () => {
    ctx = await createTestApp();
    paths = (await ctx.app.inject({ url: '/openapi.json' })).json().paths;
  });
  after(() => ctx.close());

  const operation = (method: string, path: string): Operation => {
    const found = paths[path]?.[method];
    assert.ok(found, `${method} ${path}`);
    return found;
  };
  /** The example values of a media object, whether one `example` or named `examples`. */
  const examplesOf = (media: Media | undefined): unknown[] =>
    media?.example !== undefined ? [media.example] : Object.values(media?.examples ?? {}).map((example) => example.value);

  // [method, path, success status, has a request body]
  const flows: [string, string, string, boolean][] = [
    ['post', '/api/v2/auth/login', '200', true],
    ['post', '/api/v2/auth/refresh', '200', true],
    ['post', '/api/v2/auth/password', '204', true],
    ['get', '/api/v2/auth/mfa', '200', false],
    ['post', '/api/v2/auth/mfa/totp', '201', false],
    ['post', '/api/v2/auth/mfa/totp/activate', '204', true],
    ['delete', '/api/v2/auth/mfa/totp', '204', true],
    ['post', '/api/v2/auth/mfa/recovery-codes', '201', true],
    ['post', '/api/v2/auth/mfa/verify', '200', true],
    ['post', '/api/v2/admin/api-keys', '201', true],
    ['get', '/api/v2/admin/api-keys', '200', false],
    ['get', '/api/v2/admin/api-keys/{id}', '200', false],
    ['post', '/api/v2/admin/users', '201', true],
    ['post', '/api/v2/admin/users/{id}/password', '204', true],
  ];

  test('every operation of the flows has a request example and, unless 204, a response example', () => {
    for (const [method, path, success, hasBody] of flows) {
      const op = operation(method, path);
      if (hasBody) assert.ok(examplesOf(op.requestBody?.content['application/json']).length > 0, `${method} ${path}: request example`);
      if (success !== '204') assert.ok(examplesOf(op.responses[success]?.content?.['application/json']).length > 0, `${method} ${path}: ${success} example`);
    }
  });

  test('the login result shows both token types; the DPoP header a proof', () => {
    for (const path of ['/api/v2/auth/login', '/api/v2/auth/refresh', '/api/v2/auth/mfa/verify']) {
      const op = operation('post', path);
      const types = examplesOf(op.responses['200']!.content!['application/json']).map((result) => (result as { token_type: string }).token_type);
      assert.deepEqual(types.sort(), ['Bearer', 'DPoP'], path);
      const proof = op.parameters?.find((parameter) => parameter.in === 'header' && parameter.name.toLowerCase() === 'dpop');
      const example = proof?.example;
      assert.match(String(example), /^eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+$/, `${path}: a DPoP proof example`);
      assert.equal(JSON.parse(Buffer.from(String(example).split('.')[0]!, 'base64url').toString()).typ, 'dpop+jwt');
      const refusals = examplesOf(op.responses['401']!.content!['application/problem+json']) as { code: string }[];
      assert.ok(refusals.some((problem) => problem.code === 'invalid_dpop_proof'), `${path}: a refused proof`);
    }
  });

  test('a login shows the 401s of a second factor, with their mfa_token', () => {
    const refusals = examplesOf(operation('post', '/api/v2/auth/login').responses['401']!.content!['application/problem+json']) as { code: string; mfa_token?: string; methods?: string[] }[];
    const required = refusals.find((problem) => problem.code === 'mfa_required');
    assert.ok(required?.mfa_token?.startsWith('mfa_'));
    assert.deepEqual(required?.methods, ['totp', 'recovery_code']);
    assert.ok(refusals.find((problem) => problem.code === 'mfa_enrollment_required')?.mfa_token);
  });

  test('every route that sets a password shows the refusal of a common one, on its field', () => {
    for (const [path, field] of [['/api/v2/auth/password', 'body.new_password'], ['/api/v2/admin/users', 'body.password'], ['/api/v2/admin/users/{id}/password', 'body.password']] as const) {
      const refusals = examplesOf(operation('post', path).responses['400']!.content!['application/problem+json']) as { code: string; errors: { field: string; message: string }[] }[];
      const refusal = refusals.find((problem) => problem.code === 'validation_failed');
      assert.equal(refusal?.errors[0]!.field, field, path);
      assert.match(refusal.errors[0]!.message, /too common/);
    }
  });

  test('an API key example has an expiry, its maker and its last use', () => {
    const [key] = examplesOf(operation('get', '/api/v2/admin/api-keys/{id}').responses['200']!.content!['application/json']) as Record<string, unknown>[];
    assert.ok(key?.expires_at && key.last_used_at && key.creator);
    const [body] = examplesOf(operation('post', '/api/v2/admin/api-keys').requestBody!.content['application/json']) as Record<string, unknown>[];
    assert.ok(body?.expires_at);
  });

  test('a portal link takes an API key like the webhook routes, and says which keys may make one', () => {
    const link = operation('post', '/v1/{marketplace_code}/portal-links') as Operation & { security?: unknown };
    const webhooks = operation('post', '/v1/{marketplace_code}/webhooks') as Operation & { security?: unknown };
    assert.deepEqual(link.security, webhooks.security);
    assert.ok((link.security as Record<string, unknown>[]).some((scheme) => 'bearerAuth' in scheme), 'bearerAuth: an access token or an API key');
    assert.match(link.description ?? '', /API keys \(a `marketplace` key for its own marketplace, an `admin` key\)/);
    assert.match(link.description ?? '', /seller keys get 403, another marketplace's user or key 404/);
    assert.ok(link.responses['403'] && link.responses['404']);
  });

  test('logout and revoke-all say that ACCESS_TOKEN_REVOCATION=session ends access tokens too', () => {
    for (const path of ['/api/v2/auth/logout', '/api/v2/auth/revoke-all']) assert.match(operation('post', path).description ?? '', /ACCESS_TOKEN_REVOCATION=session/, path);
  });
});
