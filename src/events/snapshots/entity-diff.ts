import { canonicalJson } from '../canonical-json.js';

/** One entry of a computed `changes` (docs/events.md, "What changed"). */
export interface FieldChange {
  field: string;
  from: unknown;
  to: unknown;
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** Key order ignored: `{"a":1,"b":2}` equals `{"b":2,"a":1}`. */
export const sameJson = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);

/**
 * What differs between two states of an entity object: one entry per field whose value differs,
 * nested objects compared field by field (dotted paths: `product.price`), arrays and every other
 * value compared whole, a field added with `from` null and one removed with `to` null. In the order of
 * the new object's fields, the removed ones after them.
 * Numbers are compared exactly: the intake keeps only numbers whose double has the producer's decimal
 * value (exact-numbers.ts), so two numbers are equal here exactly when their decimal values are
 * (`1.50` and `1.5` are the same number; `0.1` and `0.10000000000000001` could not both be accepted).
 */
export function computeChanges(before: Record<string, unknown>, after: Record<string, unknown>, prefix = ''): FieldChange[] {
  const changes: FieldChange[] = [];
  const keys = [...Object.keys(after), ...Object.keys(before).filter((key) => !Object.hasOwn(after, key))];
  for (const key of keys) {
    const field = `${prefix}${key}`;
    const had = Object.hasOwn(before, key);
    const has = Object.hasOwn(after, key);
    const from = had ? before[key] : null;
    const to = has ? after[key] : null;
    if (had && has && isObject(from) && isObject(to)) changes.push(...computeChanges(from, to, `${field}.`));
    else if (had !== has || !sameJson(from, to)) changes.push({ field, from, to });
  }
  return changes;
}
