import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { checkFilter, matchesFilter, type Filter } from './filter.js';

/**
 * A reference reading of the filter rules (docs/webhooks.md, "Filters"), written independently of
 * filter.ts: equality through canonical JSON text, the path walked with reduce, each operator from its
 * one-line definition. The evaluator must agree with it on every generated filter and body.
 */
const canonical = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(canonical).join(',')}]`
    : value !== null && typeof value === 'object'
      ? `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`).join(',')}}`
      : JSON.stringify(value);

type Lookup = { found: true; value: unknown } | { found: false };

const lookup = (body: unknown, path: string): Lookup =>
  path.split('.').reduce<Lookup>((at, segment) => {
    if (!at.found || at.value === null || typeof at.value !== 'object') return { found: false };
    const container = at.value as Record<string, unknown>;
    if (Array.isArray(container) && !/^(0|[1-9][0-9]*)$/.test(segment)) return { found: false };
    return Object.prototype.hasOwnProperty.call(container, segment) ? { found: true, value: container[segment] } : { found: false };
  }, { found: true, value: body });

const ordered = (at: Lookup, operand: unknown, holds: (a: number | string, b: number | string) => boolean) =>
  at.found && typeof at.value === typeof operand && ['number', 'string'].includes(typeof operand) && holds(at.value as number | string, operand as number | string);

const OPERATORS: Record<string, (at: Lookup, operand: unknown) => boolean> = {
  $eq: (at, operand) => at.found && canonical(at.value) === canonical(operand),
  $ne: (at, operand) => !(at.found && canonical(at.value) === canonical(operand)),
  $in: (at, operand) => at.found && (operand as unknown[]).map(canonical).includes(canonical(at.value)),
  $nin: (at, operand) => !(at.found && (operand as unknown[]).map(canonical).includes(canonical(at.value))),
  $gt: (at, operand) => ordered(at, operand, (a, b) => a > b),
  $gte: (at, operand) => ordered(at, operand, (a, b) => a >= b),
  $lt: (at, operand) => ordered(at, operand, (a, b) => a < b),
  $lte: (at, operand) => ordered(at, operand, (a, b) => a <= b),
  $exists: (at, operand) => at.found === operand,
};

function reference(filter: Filter, body: unknown): boolean {
  return Object.keys(filter).every((key) => {
    const value = filter[key];
    if (key === '$and') return (value as Filter[]).every((item) => reference(item, body));
    if (key === '$or') return (value as Filter[]).some((item) => reference(item, body));
    if (key === '$not') return !reference(value as Filter, body);
    const at = lookup(body, key);
    const operators = value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).some((k) => k.startsWith('$'));
    return operators ? Object.entries(value as Record<string, unknown>).every(([op, operand]) => OPERATORS[op]!(at, operand)) : OPERATORS.$eq!(at, value);
  });
}

const scalar = fc.constantFrom<unknown>(0, 1, 2, -1.5, 10, 'a', 'b', 'APRO', '', null, true, false);
const value = fc.oneof(scalar, fc.constantFrom<unknown>([1, 2], [2, 1], [], { x: 1 }, { x: 1, y: 'a' }, { y: 'a', x: 1 }));
const body = fc.record(
  {
    a: fc.oneof(value, fc.record({ x: value, y: value }, { requiredKeys: [] })),
    b: value,
    c: fc.array(value, { maxLength: 3 }),
    n: value,
  },
  { requiredKeys: [] },
);
const path = fc.constantFrom('a', 'b', 'a.x', 'a.y', 'c', 'c.0', 'c.1', 'c.01', 'n', 'missing', 'a.x.deeper');
const operatorObject = fc
  .uniqueArray(
    fc.oneof(
      fc.tuple(fc.constantFrom('$eq', '$ne'), value),
      fc.tuple(fc.constantFrom('$in', '$nin'), fc.array(value, { maxLength: 3 })),
      fc.tuple(fc.constantFrom('$gt', '$gte', '$lt', '$lte'), fc.constantFrom<unknown>(0, 1, 2, -1.5, 'a', 'b', '')),
      fc.tuple(fc.constant('$exists'), fc.boolean()),
    ),
    { minLength: 1, maxLength: 3, selector: ([operator]) => operator },
  )
  .map((entries) => Object.fromEntries(entries));
const condition = fc.oneof(value, operatorObject);

const { filter } = fc.letrec<{ filter: Filter; leaf: Filter }>((tie) => ({
  leaf: fc.uniqueArray(fc.tuple(path, condition), { maxLength: 3, selector: ([p]) => p }).map((entries) => Object.fromEntries(entries)),
  filter: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    tie('leaf'),
    fc.array(tie('filter'), { minLength: 1, maxLength: 3 }).map((items) => ({ $and: items })),
    fc.array(tie('filter'), { minLength: 1, maxLength: 3 }).map((items) => ({ $or: items })),
    tie('filter').map((item) => ({ $not: item })),
    fc.tuple(tie('leaf'), tie('filter')).map(([leaf, item]) => ({ ...leaf, $or: [item] })),
  ),
}));

test('the evaluator agrees with the reference reading on random filters and bodies', () => {
  fc.assert(
    fc.property(filter, body, (f, b) => {
      // Filters past the size or depth limit are left to filter.test.ts.
      fc.pre(checkFilter(f).length === 0);
      assert.equal(matchesFilter(f, b), reference(f, b), JSON.stringify({ f, b }));
    }),
    { numRuns: 3000 },
  );
});

test('every generated filter within the limits is valid, and $not inverts, $and/$or of one is the filter', () => {
  fc.assert(
    fc.property(filter, body, (f, b) => {
      const problems = checkFilter(f);
      fc.pre(problems.every((problem) => problem.path !== ''));
      assert.deepEqual(problems, []);
      const result = matchesFilter(f, b);
      if (checkFilter({ $not: f }).length === 0) assert.equal(matchesFilter({ $not: f }, b), !result);
      if (checkFilter({ $and: [f] }).length === 0) assert.equal(matchesFilter({ $and: [f] }, b), result);
      if (checkFilter({ $or: [f, { missing: { $exists: true } }] }).length === 0) assert.equal(matchesFilter({ $or: [f, { missing: { $exists: true } }] }, b), result);
    }),
    { numRuns: 1000 },
  );
});
