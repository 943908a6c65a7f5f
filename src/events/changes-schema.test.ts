import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifySchema } from 'fastify';
import { createValidatorCompiler } from '../http/validation.js';
import { EventBody } from './event-schema.js';

test('`changes` takes an object, an array of anything or null, and nothing else (the schema OpenAPI linters accept says the same)', () => {
  const schema = { type: 'object', properties: { changes: EventBody.properties.changes } };
  const validate = createValidatorCompiler()({ schema: schema as FastifySchema, method: 'POST', url: '/', httpPart: 'body' }) as (data: unknown) => boolean;
  for (const changes of [{}, { stock: [5, 6] }, [], [1, 'two', { three: 3 }, null, [4]], null]) assert.equal(validate({ changes }), true, JSON.stringify(changes));
  for (const changes of ['stock', 5, true]) assert.equal(validate({ changes }), false, JSON.stringify(changes));
});
