import { invalidField } from './errors.js';
import { isCode, MAX_INT32 } from './path-params.js';

/**
 * The one cursor codec of every list of the API and the portal (keyset pagination). A cursor is
 * base64url of a JSON array: the sort key of the last row of a page, after which the next page
 * starts. Opaque to clients and not signed: a well-formed one made by hand is taken as the position
 * it names, which reveals nothing, since a list only ever shows what its caller may see. Each value
 * is checked as what its column can hold, so that a garbled or forged cursor is a 400 on
 * `query.cursor`, never an error in SQL.
 */
export type PositionValue = string | number;

const CHECKS = {
  /** An id of an `integer` column (sellers, users, connections, products, API keys). */
  int32: (value: unknown) => Number.isInteger(value) && (value as number) >= 0 && (value as number) <= MAX_INT32,
  /** A `bigint` id, or a time in µs since the epoch (the database's precision: a JS Date would lose it). */
  bigint: (value: unknown) => Number.isSafeInteger(value) && (value as number) >= 0,
  /** A marketplace or webhook code (a NUL, which no column can hold, is refused here). */
  code: (value: unknown) => typeof value === 'string' && isCode(value),
};
export type PositionField = keyof typeof CHECKS;
export type Position<F extends readonly PositionField[]> = { -readonly [K in keyof F]: F[K] extends 'code' ? string : number };

/** The message of the 400, for every list. */
export const CURSOR_REFUSED = 'is not a cursor this service issued';

export function encodeCursor(position: readonly PositionValue[]): string {
  return Buffer.from(JSON.stringify(position)).toString('base64url');
}

/** The position a cursor names, each value checked against `fields`; else 400 `validation_failed` on `query.cursor`. */
export function decodeCursor<const F extends readonly PositionField[]>(cursor: string, fields: F): Position<F> {
  const values = positionValues(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (values?.length === fields.length && fields.every((field, i) => CHECKS[field](values[i]))) return values as Position<F>;
  throw invalidField('query.cursor', CURSOR_REFUSED);
}

function positionValues(text: string): unknown[] | undefined {
  // The forms issued before this codec, still read so that a client paging through an upgrade
  // does not get a 400: `<µs>.<id>` (delivery log, webhook history), `p:<id>` (products) and a
  // bare JSON key (admin lists). Read before JSON: `<µs>.<id>` is also a JSON number.
  const older = /^(?:(\d{1,16})\.(\d{1,15})|p:(\d{1,10}))$/.exec(text);
  if (older) return older[3] === undefined ? [Number(older[1]), Number(older[2])] : [Number(older[3])];
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value : [value];
  } catch {
    return undefined;
  }
}

/** A position in a list newest first by (created_at, id): the delivery log and the webhook history. */
export interface TimeIdPosition {
  /** created_at in µs since the epoch: a page boundary between two rows of one millisecond neither skips nor repeats. */
  createdMicros: number;
  id: number;
}

export const timeIdCursor = {
  encode: (row: { created_micros: string | number; id: string | number }): string => encodeCursor([Number(row.created_micros), Number(row.id)]),
  decode: (cursor: string): TimeIdPosition => {
    const [createdMicros, id] = decodeCursor(cursor, ['bigint', 'bigint']);
    return { createdMicros, id };
  },
};

/**
 * A page out of the `limit + 1` rows read for it (one more tells whether another page exists), and
 * the cursor after its last row; null on the last page.
 */
export function keysetPage<T>(rows: readonly T[], limit: number, cursorOf: (row: T) => string): { rows: T[]; next: string | null } {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { rows: page, next: rows.length > limit && last !== undefined ? cursorOf(last) : null };
}
