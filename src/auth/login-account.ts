import type { User } from '../accounts/accounts.repository.js';
import { canonicalUserName } from '../accounts/user-name.js';
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
 * the lookup use the same normalisation because the database computes both. The typed name is
 * taken in its canonical form (user-name.ts: NFKC, trimmed), so `"alice "` and `ａｌｉｃｅ` log in
 * as `alice`. A name stored before names were canonical (say `"bob "`) is still found when typed
 * exactly as stored, unless its canonical form names another user: that one wins.
 */
export async function findLoginAccount(db: Queryable, username: string): Promise<LoginAccount> {
  const { rows } = await db.query<User & { folded: string; id: number | null }>(
    `SELECT lower($1::text) AS folded, u.*
     FROM (SELECT) AS one LEFT JOIN LATERAL (
       SELECT id, username, password_hash, seller_id, role, marketplace_code, active
         FROM users WHERE lower(username) IN (lower($1::text), lower($2::text))
        ORDER BY lower(username) = lower($1::text) DESC LIMIT 1
     ) AS u ON true`,
    [canonicalUserName(username), username],
    // Prepared (QueryOptions.prepare): its planning cost twice its run. The columns are named for it.
    { prepare: true },
  );
  const { folded, ...row } = rows[0]!;
  if (row.id === null) return { user: undefined, limiterAccount: `name:${folded}` };
  return { user: row as User, limiterAccount: `user:${row.id}` };
}
