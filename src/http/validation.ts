import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
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
  return ({ schema, httpPart }) => (httpPart === 'body' ? strict.compile(schema as object) : decimalIntegers(schema, coercing.compile(schema as object)));
}

/**
 * The query string and the path are text, and Ajv coerces to a number whatever Number() reads:
 * `limit=0x10`, `1e2` or ` 16` were the same as 16, and `deliveries/1.0` the same as 1. An integer
 * parameter is written in decimal digits; anything else is refused on its field.
 */
function decimalIntegers(schema: unknown, validate: ValidateFunction): ValidateFunction {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  const names = Object.keys(properties).filter((name) => properties[name]!.type === 'integer');
  if (names.length === 0) return validate;
  const checked = ((data: unknown) => {
    const values = (data ?? {}) as Record<string, unknown>;
    const errors: ErrorObject[] = names
      .filter((name) => typeof values[name] === 'string' && !/^-?\d+$/.test(values[name]))
      .map((name) => ({ instancePath: `/${name}`, schemaPath: `#/properties/${name}/type`, keyword: 'type', params: { type: 'integer' }, message: 'must be an integer in decimal digits' }));
    checked.errors = errors.length > 0 ? errors : null;
    if (errors.length > 0) return false;
    const valid = validate(data);
    checked.errors = validate.errors;
    return valid;
  }) as ValidateFunction;
  return checked;
}
