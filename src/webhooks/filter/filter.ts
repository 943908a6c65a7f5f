/**
 * A webhook's filter (docs/webhooks.md, "Filters"): a MongoDB-style query over the notification body,
 * evaluated at intake, so that a webhook gets only the notifications it acts on. Written here rather
 * than taken from a library: the MongoDB-style evaluators on npm (sift, mingo) evaluate far more than
 * this subset ($regex, $where, $expr, $elemMatch, implicit matching of array elements), which would all
 * have to be refused before evaluation; a subset this small is shorter to write and to test
 * (filter.property.test.ts compares it with an independent reading of the rules).
 *
 * - A filter is an object; all its entries must hold (an empty filter matches every notification).
 * - A key is a dotted path into the body (`payload.order.status`; `payload.order.products.0.sku`
 *   indexes an array) or a combinator: `$and` and `$or` take a non-empty array of filters, `$not` one filter.
 * - A value is a literal (equality, JSON value against JSON value, key order ignored, arrays whole)
 *   or an object of operators, all of which must hold: `$eq`, `$ne`, `$in`, `$nin` (an array),
 *   `$gt`, `$gte`, `$lt`, `$lte` (a number or a string; a value of another type never matches) and
 *   `$exists` (a boolean).
 * - A path that is not in the body matches nothing but `$ne`, `$nin`, `$exists: false` (and `$not`):
 *   null is a value, not an absence.
 * - No regular expressions, no code: evaluation is linear in the size of the filter.
 */

export const FILTER_MAX_BYTES = 4096;
export const FILTER_MAX_DEPTH = 8;

export type Filter = Record<string, unknown>;

/** A problem with a filter: `path` within the filter (`$or.1.payload.order.status.$gt`), '' for the whole. */
export interface FilterProblem {
  path: string;
  message: string;
}

const COMPARISONS = ['$gt', '$gte', '$lt', '$lte'] as const;
export const FILTER_OPERATORS = ['$eq', '$ne', '$in', '$nin', ...COMPARISONS, '$exists'] as const;
export const FILTER_COMBINATORS = ['$and', '$or', '$not'] as const;

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
const join = (path: string, key: string | number) => (path === '' ? String(key) : `${path}.${key}`);

/** Nesting of objects and arrays, the filter itself being level 1; stops counting past the limit. */
function depthOf(value: unknown, limit: number): number {
  if (value === null || typeof value !== 'object') return 0;
  let deepest = 0;
  for (const child of Object.values(value)) {
    deepest = Math.max(deepest, depthOf(child, limit));
    if (deepest >= limit) break;
  }
  return deepest + 1;
}

/** Every problem of a filter (empty: valid). */
export function checkFilter(filter: unknown): FilterProblem[] {
  if (!isObject(filter)) return [{ path: '', message: 'must be an object' }];
  const bytes = Buffer.byteLength(JSON.stringify(filter));
  if (bytes > FILTER_MAX_BYTES) return [{ path: '', message: `must be at most ${FILTER_MAX_BYTES} bytes of JSON (it is ${bytes})` }];
  if (depthOf(filter, FILTER_MAX_DEPTH + 1) > FILTER_MAX_DEPTH) return [{ path: '', message: `must be nested at most ${FILTER_MAX_DEPTH} levels deep` }];
  const problems: FilterProblem[] = [];
  checkQuery(filter, '', problems);
  return problems;
}

function checkQuery(query: Record<string, unknown>, path: string, problems: FilterProblem[]): void {
  for (const [key, value] of Object.entries(query)) {
    const at = join(path, key);
    if (key === '$and' || key === '$or') {
      if (!Array.isArray(value) || value.length === 0) problems.push({ path: at, message: 'must be a non-empty array of filters' });
      else value.forEach((item, index) => (isObject(item) ? checkQuery(item, join(at, index), problems) : problems.push({ path: join(at, index), message: 'must be a filter (an object)' })));
    } else if (key === '$not') {
      if (isObject(value)) checkQuery(value, at, problems);
      else problems.push({ path: at, message: 'must be a filter (an object)' });
    } else if (key.startsWith('$')) {
      problems.push({ path: at, message: `unknown combinator ${key} (use ${FILTER_COMBINATORS.join(', ')}; operators go under a field)` });
    } else if (key.split('.').some((segment) => segment === '')) {
      problems.push({ path: at, message: 'must be a dotted path without empty segments' });
    } else {
      checkCondition(value, at, problems);
    }
  }
}

function isOperatorObject(value: unknown): value is Record<string, unknown> {
  return isObject(value) && Object.keys(value).some((key) => key.startsWith('$'));
}

function checkCondition(value: unknown, path: string, problems: FilterProblem[]): void {
  if (!isOperatorObject(value)) return; // a literal: any JSON value
  for (const [operator, operand] of Object.entries(value)) {
    const at = join(path, operator);
    if (!operator.startsWith('$')) problems.push({ path: at, message: 'cannot mix operators and fields in one object (write the field as its own dotted path)' });
    else if (operator === '$eq' || operator === '$ne') continue;
    else if (operator === '$in' || operator === '$nin') {
      if (!Array.isArray(operand)) problems.push({ path: at, message: 'must be an array' });
    } else if ((COMPARISONS as readonly string[]).includes(operator)) {
      if (typeof operand !== 'number' && typeof operand !== 'string') problems.push({ path: at, message: 'must be a number or a string' });
    } else if (operator === '$exists') {
      if (typeof operand !== 'boolean') problems.push({ path: at, message: 'must be true or false' });
    } else {
      problems.push({ path: at, message: `unknown operator ${operator} (use ${FILTER_OPERATORS.join(', ')})` });
    }
  }
}

const MISSING = Symbol('missing');
type Found = unknown | typeof MISSING;

/** The value at a dotted path, or MISSING: into objects by key, into arrays by index. */
function resolve(body: unknown, path: string): Found {
  let current: unknown = body;
  for (const segment of path.split('.')) {
    if (isObject(current) && Object.hasOwn(current, segment)) current = current[segment];
    else if (Array.isArray(current) && /^(0|[1-9]\d*)$/.test(segment) && Number(segment) < current.length) current = current[Number(segment)];
    else return MISSING;
  }
  return current;
}

/** JSON equality: key order ignored, arrays element by element. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, index) => jsonEqual(item, b[index]));
  if (isObject(a)) {
    if (!isObject(b)) return false;
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && jsonEqual(a[key], b[key]));
  }
  return false;
}

function compare(found: Found, operator: string, operand: unknown): boolean {
  if (found === MISSING || typeof found !== typeof operand || (typeof found !== 'number' && typeof found !== 'string')) return false;
  const [a, b] = [found as number | string, operand as number | string];
  if (operator === '$gt') return a > b;
  if (operator === '$gte') return a >= b;
  if (operator === '$lt') return a < b;
  return a <= b;
}

function holds(found: Found, operator: string, operand: unknown): boolean {
  switch (operator) {
    case '$eq':
      return found !== MISSING && jsonEqual(found, operand);
    case '$ne':
      return !holds(found, '$eq', operand);
    case '$in':
      return found !== MISSING && (operand as unknown[]).some((item) => jsonEqual(found, item));
    case '$nin':
      return !holds(found, '$in', operand);
    case '$exists':
      return (found !== MISSING) === operand;
    default:
      return compare(found, operator, operand);
  }
}

/** Whether a notification body matches a filter already checked by checkFilter. */
export function matchesFilter(filter: Filter, body: unknown): boolean {
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and') {
      if (!(value as Filter[]).every((item) => matchesFilter(item, body))) return false;
    } else if (key === '$or') {
      if (!(value as Filter[]).some((item) => matchesFilter(item, body))) return false;
    } else if (key === '$not') {
      if (matchesFilter(value as Filter, body)) return false;
    } else {
      const found = resolve(body, key);
      const ok = isOperatorObject(value) ? Object.entries(value).every(([operator, operand]) => holds(found, operator, operand)) : holds(found, '$eq', value);
      if (!ok) return false;
    }
  }
  return true;
}
