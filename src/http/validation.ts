import { Ajv, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import type { FastifySchemaCompiler } from 'fastify';

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

const rfc3339 = fullFormats['date-time'] as { validate: (value: string) => boolean };

/**
 * RFC 3339 date-times that JavaScript can also read: RFC 3339 allows a leap second (23:59:60),
 * which Date reads as an invalid date, and the routes would have queried with it (a 500).
 */
function withDateTimes(ajv: Ajv): Ajv {
  return ajv.addFormat('date-time', { type: 'string', validate: (value: string) => rfc3339.validate(value) && !Number.isNaN(Date.parse(value)) });
}

const shared: Options = { allErrors: true, removeAdditional: false, useDefaults: true, strict: false };

/**
 * Bodies are validated strictly (a string is never coerced into a number, unknown fields are
 * errors where the schema says so); the query string and path, which are text, are coerced.
 */
export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const strict = withDateTimes(addFormats(new Ajv({ ...shared, coerceTypes: false })));
  const coercing = withDateTimes(addFormats(new Ajv({ ...shared, coerceTypes: 'array' })));
  return ({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema as object);
}
