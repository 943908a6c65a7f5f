import type { FastifyRequest } from 'fastify';
import { MAX_JSON_DEPTH } from './body-guard.js';
import { AppError, type FieldError } from './errors.js';


/** A NUL, a high surrogate not followed by a low one, or a low one not preceded by a high one. */
// eslint-disable-next-line no-control-regex -- the NUL is what this looks for
const UNSTORABLE_TEXT = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Text Plaza can keep and hand on: no U+0000 (PostgreSQL's text cannot hold it, and a stored JSON
 * body with the escape `\u0000` makes every read of a field of it fail) and no unpaired surrogate
 * (not Unicode text: a JSON escape such as `\ud800` cannot be read back as text, nor decoded by
 * most receivers). A string that is not such text is refused wherever it comes, with its field.
 */
export function isStorableText(text: string): boolean {
  return !UNSTORABLE_TEXT.test(text);
}

const UNSTORABLE = 'holds a NUL character or an unpaired surrogate, which no text field can keep';

interface Pending {
  value: unknown;
  depth: number;
  parent?: Pending;
  key?: string;
}

/** `body.order.items.0`: the path is built only for the field refused. */
function fieldOf(node: Pending): string {
  const keys: string[] = [];
  for (let at: Pending | undefined = node; at?.key !== undefined; at = at.parent) keys.push(at.key);
  return ['body', ...keys.reverse()].join('.');
}

/**
 * What is wrong with a parsed JSON body, if anything: too deep, or a key or string not storable. One walk,
 * without recursion. The depth is refused before parsing already (body-guard.ts); it is checked here
 * again for bodies that come another way (a form, a parser of a plugin).
 */
function bodyFault(body: unknown, maxDepth = MAX_JSON_DEPTH): FieldError | undefined {
  const pending: Pending[] = [{ value: body, depth: 1 }];
  while (pending.length > 0) {
    const node = pending.pop()!;
    const { value, depth } = node;
    if (typeof value === 'string') {
      if (!isStorableText(value)) return { field: fieldOf(node), message: UNSTORABLE };
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth > maxDepth) return { field: 'body', message: `is nested deeper than ${maxDepth} levels` };
    for (const [key, child] of Object.entries(value)) {
      if (!isStorableText(key)) return { field: fieldOf(node), message: `has a key that ${UNSTORABLE}` };
      pending.push({ value: child, depth: depth + 1, parent: node, key });
    }
  }
  return undefined;
}

/** The query string and path parameters as parsed (strings, or arrays of them for a repeated name). */
function textFault(part: 'query' | 'path', values: unknown): FieldError | undefined {
  if (values === null || typeof values !== 'object') return undefined;
  for (const [name, value] of Object.entries(values)) {
    const texts = Array.isArray(value) ? value : [value];
    if (!isStorableText(name) || texts.some((text) => typeof text === 'string' && !isStorableText(text))) return { field: `${part}.${name}`, message: UNSTORABLE };
  }
  return undefined;
}

/** A preValidation hook for every route: after authentication, before the route's own validation. */
export async function refuseUnfitInput(request: FastifyRequest): Promise<void> {
  const fault =
    textFault('path', request.params) ?? textFault('query', request.query) ?? (request.body === undefined ? undefined : bodyFault(request.body));
  if (fault) throw new AppError('validation_failed', `${fault.field} ${fault.message}`, { errors: [fault] });
}
