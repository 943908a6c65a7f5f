/**
 * Writes a statement's parameters into its text as SQL literals. Several statements in one round
 * trip are a simple query, and the simple-query protocol carries no parameters: the hot
 * transactions that send BEGIN or COMMIT together with a statement (Database.transaction) need this.
 * Only for Plaza's own statements, whose text has no `$` but their parameters (no dollar quoting),
 * and only for the values they pass: numbers, booleans, strings, dates, null, and flat arrays of
 * those but booleans. Anything else is refused rather than guessed at.
 */
export function inlineParameters(sql: string, params: readonly unknown[]): string {
  return sql.replace(/\$(\d+)/g, (_, n: string) => {
    const index = Number(n) - 1;
    if (index < 0 || index >= params.length) throw new TypeError(`statement parameter $${n} has no value`);
    return literal(params[index]);
  });
}

function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  // In parentheses: a negative number after an operator (`x-$1`) must not become a comment (`x--1`).
  if (typeof value === 'number') return `(${finite(value)})`;
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  if (typeof value === 'string') return text(value);
  if (value instanceof Date) return text(instant(value));
  if (Array.isArray(value)) return text(`{${value.map(arrayElement).join(',')}}`);
  return unsupported(value);
}

/** An element of an array literal: NULL, a number, or a double-quoted string (backslash escapes). */
function arrayElement(item: unknown): string {
  if (item === null || item === undefined) return 'NULL';
  if (typeof item === 'number') return finite(item);
  const value = typeof item === 'string' ? item : item instanceof Date ? instant(item) : unsupported(item);
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** A date as the driver sends one, to the millisecond, but in UTC. */
function instant(value: Date): string {
  if (Number.isNaN(value.getTime())) throw new TypeError('not a valid date');
  return value.toISOString();
}

function finite(value: number): string {
  if (!Number.isFinite(value)) throw new TypeError(`not a finite number: ${value}`);
  return String(value);
}

/** An escape string (E'…'): backslashes and quotes doubled, whatever standard_conforming_strings says. */
function text(value: string): string {
  if (value.includes('\0')) throw new TypeError('a text value cannot contain NUL');
  return `E'${value.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

function unsupported(value: unknown): never {
  throw new TypeError(`cannot write a ${typeof value} into a statement`);
}
