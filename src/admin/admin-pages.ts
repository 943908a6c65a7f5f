import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { decodeCursor, encodeCursor, keysetPage } from '../http/cursor.js';
import { nextPageLink } from '../http/pagination.js';

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

/**
 * The key a cursor holds (http/cursor.ts), checked as what it can be: an id of an `integer` column
 * or a code, as `initial` is. A forged key past either (2^31, a NUL the database cannot hold) is a
 * 400 there rather than a 500 in SQL.
 */
export function decodeKey<K extends string | number>(cursor: string | undefined, initial: K): K {
  if (cursor === undefined) return initial;
  return decodeCursor(cursor, [typeof initial === 'number' ? 'int32' : 'code'])[0] as K;
}

/**
 * Lists are fetched with one row more than the page: when it comes, there is a next page, and the
 * Link header points after the page's last row.
 */
export function pageOf<T>(request: FastifyRequest, reply: FastifyReply, rows: T[], limit: number, keyOf: (row: T) => string | number): T[] {
  const page = keysetPage(rows, limit, (row) => encodeCursor([keyOf(row)]));
  if (page.next) reply.header('link', nextPageLink(request, page.next));
  return page.rows;
}
