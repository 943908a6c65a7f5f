import { findUserById, setPasswordHash } from '../accounts/accounts.repository.js';
import type { FeatureDeps } from '../deps.js';
import { AppError } from '../http/errors.js';
import type { UserPrincipal } from '../accounts/principal.js';
import { proveCurrentPassword } from './current-password.js';
import { unauthorized, USER_GONE } from './authenticate.js';
import { recordAuthEvent, type RequestOrigin } from './auth-events.repository.js';
import type { LoginLimiter } from './login-limits.js';
import { checkNewPassword } from './password-strength.js';
import { hashPassword } from './passwords.js';
import { revokeAllOfUser } from './sessions.repository.js';

/**
 * A user changes their own password. The current password is required (a stolen access token
 * alone cannot take the account over) and is counted by the login limits like a login, so it
 * cannot be guessed faster through this route. Every other session ends; this one goes on.
 */
export async function changeOwnPassword(
  { db, clock, config }: Pick<FeatureDeps, 'db' | 'clock' | 'config'>,
  limiter: LoginLimiter,
  principal: UserPrincipal,
  input: { currentPassword: string; newPassword: string; origin: RequestOrigin },
): Promise<void> {
  const now = clock.now();
  const user = await findUserById(db, principal.userId);
  if (!user) throw unauthorized(USER_GONE);
  if (!user.active) throw new AppError('user_inactive', 'The user is disabled.');
  await proveCurrentPassword(db, limiter, user, input.currentPassword, input.origin, now, 'The current password is wrong.');
  // Judged once the current password is proven (only the account's holder makes the estimator
  // work), and outside the slot: a slow estimate must not hold what every login needs.
  await checkNewPassword(input.newPassword, { field: 'body.new_password', minScore: config.PASSWORD_MIN_SCORE, userInputs: [user.username] });
  const passwordHash = await hashPassword(input.newPassword);
  await db.transaction(async (tx) => {
    await setPasswordHash(tx, user.id, passwordHash, now);
    const revoked = await revokeAllOfUser(tx, user.id, 'password_changed', now, principal.sessionId);
    await recordAuthEvent(tx, { type: 'password_changed', at: now, origin: input.origin, userId: user.id, username: user.username, sessionId: principal.sessionId, detail: { revoked_tokens: revoked } });
  });
}
