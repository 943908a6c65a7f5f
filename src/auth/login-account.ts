import type { User } from '../accounts/accounts.repository.js';
import type { Queryable } from '../db/database.js';

export interface LoginAccount {
  /** The user the name matched, if any (its state is read again under its lock, account-lock.ts). */
  user: User | undefined;
  /**
   * What the login limits count this attempt against: the user id when the name matched a user,
   * else the name as the lookup folded it. Never the typed name: PostgreSQL's lower() (which the
   * lookup and the unique index use) and JavaScript's toLowerCase() disagree (`İ` folds to `i` in
   * the database, to `i̇` in JavaScript), and every spelling the lookup takes for one account must
   * count as that account.
   */
  limiterAccount: string;
}

/**
 * The user lookup of a login and the fold it compared with, in one statement: the limiter and
 * the lookup use the same normalisation because the database computes both.
 */
export async function findLoginAccount(db: Queryable, username: string): Promise<LoginAccount> {
  const { rows } = await db.query<User & { folded: string; id: number | null }>(
    `SELECT lower($1::text) AS folded, u.*
     FROM (SELECT) AS one LEFT JOIN users AS u ON lower(u.username) = lower($1::text)`,
    [username],
  );
  const { folded, ...row } = rows[0]!;
  if (row.id === null) return { user: undefined, limiterAccount: `name:${folded}` };
  return { user: row as User, limiterAccount: `user:${row.id}` };
}
