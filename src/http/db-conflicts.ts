import { isUniqueViolation } from '../db/database.js';
import { AppError } from './errors.js';

/**
 * Database refusals an administrator can act on, as 409s: a key that exists already, a row that
 * others still refer to (deleting it would orphan them: that is what "delete where safe" means),
 * or a reference to a row that does not exist.
 */
export function explainConstraint(error: unknown, what: string): unknown {
  if (isUniqueViolation(error)) return new AppError('conflict', `${what} already exists.`);
  const e = error as { code?: string; detail?: string };
  if (e.code === '23503') {
    if (/is still referenced/.test(e.detail ?? '')) {
      return new AppError('conflict', `${what} is still in use (${tableOf(e.detail)}); remove those first.`);
    }
    // `Key (seller_id)=(999) is not present in table "sellers".`: the value and the table say it.
    const value = /\)=\((.*)\)/.exec(e.detail ?? '')?.[1];
    const noun = tableOf(e.detail).replace(/s$/, '');
    return new AppError('conflict', `There is no ${noun} ${value ?? ''}.`.replace(' .', '.'));
  }
  return error;
}

function tableOf(detail: string | undefined): string {
  return /table "(\w+)"/.exec(detail ?? '')?.[1] ?? 'another record';
}

/** Runs work, turning constraint violations into explained 409s. */
export async function withConstraints<T>(what: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw explainConstraint(error, what);
  }
}
