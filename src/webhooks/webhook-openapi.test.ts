import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';

describe('webhooks in the OpenAPI document', () => {
  let ctx: TestContext;
  let paths: Record<string, Record<string, { summary?: string; tags?: string[]; security?: unknown[]; requestBody?: { content: Record<string, { example?: unknown }> }; responses: Record<string, { content?: Record<string, { example?: unknown; schema?: unknown }> }> }>>;
  before(async () => {
    ctx = await createTestApp();
    paths = (await ctx.app.inject({ url: '/openapi.json' })).json().paths;
  });
  after(() => ctx.close());

  const endpoints: [string, string, string, string[]][] = [
    ['post', '/v1/{marketplace_code}/webhooks', '201', ['400', '401', '403', '404', '409']],
    ['get', '/v1/{marketplace_code}/webhooks', '200', ['400', '401', '404']],
    ['get', '/v1/{marketplace_code}/webhooks/{code}', '200', ['401', '404']],
    ['patch', '/v1/{marketplace_code}/webhooks/{code}', '200', ['400', '401', '403', '404']],
    ['delete', '/v1/{marketplace_code}/webhooks/{code}', '204', ['401', '404']],
    ['post', '/v1/{marketplace_code}/webhooks/{code}/rotate-secret', '200', ['401', '404']],
  ];

  test('each endpoint has a summary, bearer security, examples and its problem responses', () => {
    for (const [method, path, success, problems] of endpoints) {
      const operation = paths[path]?.[method];
      assert.ok(operation, `${method} ${path}`);
      assert.ok(operation.summary);
      assert.deepEqual(operation.tags, ['webhooks']);
      assert.deepEqual(operation.security, [{ bearerAuth: [] }, { dpopAuth: [] }]);
      assert.ok(operation.responses[success], `${method} ${path} ${success}`);
      if (success !== '204') assert.ok(operation.responses[success]!.content!['application/json']!.example, `${method} ${path} response example`);
      if (operation.requestBody) assert.ok(operation.requestBody.content['application/json']!.example, `${method} ${path} request example`);
      for (const status of problems) assert.ok(operation.responses[status]?.content?.['application/problem+json'], `${method} ${path} ${status}`);
    }
  });

  test('no response schema carries a secret except create and rotate-secret', () => {
    for (const [method, path, success] of endpoints) {
      const schema = JSON.stringify(paths[path]![method]!.responses[success]!.content?.['application/json']?.schema ?? {});
      assert.equal(schema.includes('"secret"'), path.endsWith('rotate-secret') || (method === 'post' && path.endsWith('/webhooks')), `${method} ${path}`);
    }
  });
});
