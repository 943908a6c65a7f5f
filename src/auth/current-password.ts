import type { Queryable } from '../db/database.js';
import { AppError, rateLimited } from '../http/errors.js';
import { recordAuthEvent, type RequestOrigin } from './auth-events.repository.js';
import type { LoginLimiter } from './login-limits.js';
import { reservePasswordWork } from './passwords.js';

/**
 * A signed-in user proves its password again (a password change, new recovery codes): counted by
 * the login limits like a login (login-account.ts names the account `user:<id>`), so it cannot be
 * guessed faster here. The password slot is taken before the limits count the attempt, as login
 * does: a 503 (ARGON2_MAX_IN_PROGRESS) never counts as a failure. Throws 429 or 401.
 */
export async function proveCurrentPassword(
  db: Queryable,
  limiter: LoginLimiter,
  user: { id: number; username: string; password_hash: string },
  password: string,
  origin: RequestOrigin,
  now: Date,
  wrong: string,
): Promise<void> {
  const account = `user:${user.id}`;
  const work = reservePasswordWork();
  try {
    const decision = await limiter.attempt(account, origin.ip, now);
    if (!decision.allowed) throw rateLimited(decision.retryAfterSeconds, 'Too many failed attempts');
    if (!(await work.verify(user.password_hash, password))) {
      await recordAuthEvent(db, { type: 'login_failed', at: now, origin, userId: user.id, username: user.username, detail: { reason: 'wrong_current_password' } });
      throw new AppError('invalid_credentials', wrong);
    }
    await limiter.succeeded(account, origin.ip, now);
  } finally {
    work.release();
  }
}
