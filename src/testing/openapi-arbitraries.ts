import fc from 'fast-check';

/** The part of JSON Schema (as @fastify/swagger emits it) that the fuzzer understands. */
export interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  $ref?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, JsonSchema> };
}

export interface Operation {
  parameters?: { name: string; in: string; required?: boolean; schema?: JsonSchema }[];
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
  security?: unknown[];
}

const unicode = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom('\u0000', 'a\u0000b', '\ud800', '\udfff', '\u202e\u0645\u0631\u062d\u0628\u0627', '🦄🏳️‍🌈', 'Ω≈ç√', '\uFEFF', 'e\u0301', '\r\n', '%00', '../../etc/passwd', "'; DROP TABLE users; --", '${jndi:ldap://x}', '<script>alert(1)</script>'),
);

/** Values that conform to the schema (as far as a generator easily can). */
export function conforming(schema: JsonSchema | undefined, doc: OpenApiDocument, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 6) return fc.jsonValue({ maxDepth: 2 });
  if (schema.$ref) {
    const name = schema.$ref.split('/').pop()!.replace(/#$/, '');
    return conforming(doc.components?.schemas?.[name], doc, depth + 1);
  }
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map((s) => conforming(s, doc, depth + 1)));
  if (Array.isArray(schema.type)) return fc.oneof(...schema.type.map((type) => conforming({ ...schema, type }, doc, depth + 1)));
  switch (schema.type) {
    case 'string':
      if (schema.format === 'date-time') return fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString());
      if (schema.pattern) {
        try {
          return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length <= (schema.maxLength ?? 10_000));
        } catch {
          // a pattern fast-check cannot generate from: plain strings below
        }
      }
      return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 40, 40) });
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1_000_000, max: schema.maximum ?? 1_000_000_000 });
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(conforming(schema.items, doc, depth + 1), { maxLength: 4 });
    case 'object': {
      const properties = schema.properties ?? {};
      const required = schema.required ?? [];
      const record = fc.record(
        Object.fromEntries(Object.entries(properties).map(([name, s]) => [name, conforming(s, doc, depth + 1)])),
        { requiredKeys: required.filter((name) => name in properties) },
      );
      if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
        return fc.dictionary(fc.string({ maxLength: 10 }), conforming(schema.additionalProperties, doc, depth + 1), { maxKeys: 4 });
      }
      return record;
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** One field broken the ways clients and attackers break them. */
function brokenValue(): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.constantFrom(null, true, false, 0, -1, 1.5, 2 ** 53 + 1, -(2 ** 63), 1e308, '', ' ', [], {}, [null], { $gt: '' }, 'NaN', '1e999'),
    unicode,
    fc.nat({ max: 200_000 }).map((n) => 'x'.repeat(n)),
    fc.jsonValue({ maxDepth: 3 }),
  );
}

/** A body derived from the schema, then broken: a field missing, of the wrong type, huge, unicode, extra. */
export function hostileObject(schema: JsonSchema | undefined, doc: OpenApiDocument): fc.Arbitrary<unknown> {
  const base = conforming(schema, doc);
  const names = Object.keys(schema?.properties ?? {});
  if (names.length === 0) return fc.oneof(base, fc.jsonValue({ maxDepth: 4 }));
  return fc.oneof(
    { weight: 2, arbitrary: base },
    base.chain((value) => fc.constantFrom(...names).map((name) => dropField(value, name))),
    base.chain((value) => fc.tuple(fc.constantFrom(...names), brokenValue()).map(([name, broken]) => ({ ...(value as object), [name]: broken }))),
    base.chain((value) => fc.tuple(fc.string({ maxLength: 20 }), brokenValue()).map(([name, extra]) => ({ ...(value as object), [name]: extra }))),
    base.map((value) => ({ ...(value as object), ['__proto__']: { role: 'admin', isAdmin: true } })),
    fc.jsonValue({ maxDepth: 4 }),
  );
}

function dropField(value: unknown, name: string): unknown {
  if (!value || typeof value !== 'object') return value;
  const copy = { ...(value as Record<string, unknown>) };
  delete copy[name];
  return copy;
}

/** JSON nested `levels` deep, as text (JSON.stringify would overflow the stack on the way out). */
export function deeplyNested(levels: number, kind: 'array' | 'object', inside?: { body: Record<string, unknown>; field: string }): string {
  const open = kind === 'array' ? '['.repeat(levels) : '{"a":'.repeat(levels);
  const close = kind === 'array' ? ']'.repeat(levels) : '}'.repeat(levels);
  const nested = `${open}1${close}`;
  if (!inside) return nested;
  const base = JSON.stringify({ ...inside.body, [inside.field]: '__NESTED__' });
  return base.replace('"__NESTED__"', nested);
}

/** Bodies that are not what they claim to be. */
export const RAW_BODIES: { name: string; body: string | Buffer; contentType: string | undefined }[] = [
  { name: 'invalid JSON', body: '{"code": "a",', contentType: 'application/json' },
  { name: 'trailing comma', body: '{"a":1,}', contentType: 'application/json' },
  { name: 'single quotes', body: "{'a':1}", contentType: 'application/json' },
  { name: 'NaN literal', body: '{"a":NaN}', contentType: 'application/json' },
  { name: 'bare string', body: '"text"', contentType: 'application/json' },
  { name: 'bare number', body: '12', contentType: 'application/json' },
  { name: 'null', body: 'null', contentType: 'application/json' },
  { name: 'empty body with JSON type', body: '', contentType: 'application/json' },
  { name: 'NUL bytes', body: Buffer.from([0, 0, 0, 123, 125]), contentType: 'application/json' },
  { name: 'UTF-16 BOM', body: Buffer.from('\ufeff{"a":1}', 'utf16le'), contentType: 'application/json' },
  { name: 'invalid UTF-8', body: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), contentType: 'application/json' },
  { name: 'escaped NUL in a string', body: '{"username":"a\\u0000b","password":"x\\u0000","code":"a\\u0000","name":"\\u0000","author":"\\u0000"}', contentType: 'application/json' },
  { name: 'lone surrogate', body: '{"username":"\\ud800","password":"\\udfff","name":"\\ud800x","author":"\\ud800"}', contentType: 'application/json' },
  { name: 'duplicate keys', body: '{"code":"a","code":"b","name":"x","name":{"y":1},"topic":"order/create","topic":7,"username":"a","username":"b","password":"p","password":1}', contentType: 'application/json' },
  { name: '__proto__ key', body: '{"__proto__":{"role":"admin"},"constructor":{"prototype":{"role":"admin"}}}', contentType: 'application/json' },
  { name: 'text/plain', body: '{"a":1}', contentType: 'text/plain' },
  { name: 'form encoded', body: 'username=a&password=b', contentType: 'application/x-www-form-urlencoded' },
  { name: 'multipart', body: '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--', contentType: 'multipart/form-data; boundary=x' },
  { name: 'xml', body: '<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">]><a>&x;</a>', contentType: 'application/xml' },
  { name: 'json with odd charset', body: '{"a":1}', contentType: 'application/json; charset=utf-32' },
  { name: 'json type with parameters', body: '{"a":1}', contentType: 'application/json; foo=bar; charset=utf-8' },
  { name: 'vendor json type', body: '{"a":1}', contentType: 'application/vnd.api+json' },
  { name: 'no content type', body: '{"a":1}', contentType: undefined },
  { name: 'oversized body (2 MiB)', body: `{"a":"${'x'.repeat(2 * 1024 * 1024)}"}`, contentType: 'application/json' },
  { name: 'oversized body of many keys', body: `{${Array.from({ length: 120_000 }, (_, i) => `"k${i}":${i}`).join(',')}}`, contentType: 'application/json' },
  { name: 'deep array (10 000 levels)', body: deeplyNested(10_000, 'array'), contentType: 'application/json' },
  { name: 'deep object (10 000 levels)', body: deeplyNested(10_000, 'object'), contentType: 'application/json' },
];
