import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { invalidField } from '../http/errors.js';
import { nextPageLink } from '../http/pagination.js';
import { isCode, MAX_INT32 } from '../http/path-params.js';

export const ADMIN_PAGE_SIZE = 100;

/** `limit` and `cursor`, as the other lists take them. */
export const PageQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: ADMIN_PAGE_SIZE, description: `Items per page (default and maximum ${ADMIN_PAGE_SIZE}).` })),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 300, description: 'The position after which the page starts, from the `Link: rel="next"` header of the previous page.' })),
  },
  { additionalProperties: false },
);

export const LINK_HEADER = { link: { type: 'string', description: 'RFC 8288 link to the next page (`rel="next"`), present while there are more.' } } as const;

/** An opaque cursor: the key of the last item of a page. */
export function encodeKey(key: string | number): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

/**
 * The key a cursor holds, checked as what it can be: an id of an `integer` column or a code. A forged
 * key past either (2^31, a NUL the database cannot hold) is a 400 here rather than a 500 in SQL.
 */
export function decodeKey<K extends string | number>(cursor: string | undefined, initial: K): K {
  if (cursor === undefined) return initial;
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    const fits = typeof value === 'number' ? Number.isInteger(value) && value >= 0 && value <= MAX_INT32 : typeof value === 'string' && isCode(value);
    if (fits && typeof value === typeof initial) return value as K;
  } catch {
    // falls through to the 400 below
  }
  throw invalidField('query.cursor', 'is not a cursor this service issued');
}

/**
 * Lists are fetched with one row more than the page: when it comes, there is a next page, and the
 * Link header points after the page's last row.
 */
export function pageOf<T>(request: FastifyRequest, reply: FastifyReply, rows: T[], limit: number, keyOf: (row: T) => string | number): T[] {
  if (rows.length <= limit) return rows;
  const page = rows.slice(0, limit);
  reply.header('link', nextPageLink(request, encodeKey(keyOf(page.at(-1)!))));
  return page;
}
