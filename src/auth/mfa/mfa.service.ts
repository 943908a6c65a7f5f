import { findUserById, type User } from '../../accounts/accounts.repository.js';
import type { FeatureDeps } from '../../deps.js';
import { AppError, invalidField, rateLimited } from '../../http/errors.js';
import { decryptSecret, encryptSecret } from '../../keys/secret-box.js';
import { recordAuthEvent, type RequestOrigin } from '../auth-events.repository.js';
import { unauthorized, USER_GONE } from '../authenticate.js';
import type { LoginLimiter } from '../login-limits.js';
import { proveCurrentPassword } from '../current-password.js';
import { deleteSecondFactor, findTotp, replaceRecoveryCodes, unusedRecoveryCodes, upsertPendingTotp, useTotpStep } from './mfa.repository.js';
import { useSecondFactorCode } from './second-factor-code.js';
import { matchTotp, newTotpSecret, otpauthUrl } from './totp.js';

type Deps = Pick<FeatureDeps, 'db' | 'clock' | 'keys' | 'config'>;

export interface TotpEnrolment {
  secret: string;
  otpauth_url: string;
}

async function activeUser(db: FeatureDeps['db'], userId: number): Promise<User> {
  const user = await findUserById(db, userId);
  if (!user) throw unauthorized(USER_GONE);
  if (!user.active) throw new AppError('user_inactive', 'The user is disabled.');
  return user;
}

/** The second factor state of a user, for GET /api/v2/auth/mfa and the portal. */
export async function secondFactorStatus({ db }: Pick<FeatureDeps, 'db'>, userId: number): Promise<{ totp: 'none' | 'pending' | 'active'; recovery_codes_left: number }> {
  const totp = await findTotp(db, userId);
  return { totp: !totp ? 'none' : totp.activated_at ? 'active' : 'pending', recovery_codes_left: await unusedRecoveryCodes(db, userId) };
}

/** A new TOTP secret, not active until a code of it is confirmed; 409 while one is active. */
export async function startTotpEnrolment({ db, clock, keys, config }: Deps, userId: number): Promise<TotpEnrolment> {
  const user = await activeUser(db, userId);
  const secret = newTotpSecret();
  if (!(await upsertPendingTotp(db, user.id, encryptSecret(keys.mfaSecretsKey, secret), clock.now()))) {
    throw new AppError('conflict', 'An authenticator is active; turn it off (DELETE /api/v2/auth/mfa/totp) before enrolling another.');
  }
  return { secret, otpauth_url: otpauthUrl(config.MFA_ISSUER, user.username, secret) };
}

/**
 * Confirms the pending secret with a code of it: from now on a login asks for a code. The code's
 * step counts as used. A wrong code is a 400 (the caller holds the secret: nothing to guess).
 */
export async function activateTotp({ db, clock, keys }: Deps, userId: number, code: string, origin: RequestOrigin): Promise<void> {
  const user = await activeUser(db, userId);
  const now = clock.now();
  const outcome = await db.transaction(async (tx) => {
    const totp = await findTotp(tx, user.id, true);
    if (!totp) return 'none';
    if (totp.activated_at) return 'active';
    const step = matchTotp(decryptSecret(keys.mfaSecretsKey, totp.secret_encrypted), code.replace(/\s/g, ''), now, null);
    if (step === undefined || !(await useTotpStep(tx, user.id, step, now))) return 'wrong';
    await recordAuthEvent(tx, { type: 'mfa_enrolled', at: now, origin, userId: user.id, username: user.username, detail: { method: 'totp' } });
    return 'activated';
  });
  if (outcome === 'none') throw new AppError('conflict', 'No authenticator is being enrolled; start with POST /api/v2/auth/mfa/totp.');
  if (outcome === 'active') throw new AppError('conflict', 'The authenticator is already active.');
  if (outcome === 'wrong') throw invalidField('body.code', 'is not the current code of the new authenticator (check the device\'s clock)');
}

/**
 * Turns the second factor off with a current code (TOTP or recovery): a stolen access token alone
 * cannot. The code counts towards the login limits like a password.
 */
export async function disableTotp({ db, clock, keys }: Deps, limiter: LoginLimiter, userId: number, code: string, origin: RequestOrigin): Promise<void> {
  const user = await activeUser(db, userId);
  const now = clock.now();
  const account = `user:${user.id}`;
  const decision = await limiter.attempt(account, origin.ip, now);
  if (!decision.allowed) throw rateLimited(decision.retryAfterSeconds, 'Too many failed attempts');
  const method = await db.transaction(async (tx) => {
    const used = await useSecondFactorCode(tx, keys.mfaSecretsKey, user.id, code, now);
    if (used) {
      await deleteSecondFactor(tx, user.id);
      await recordAuthEvent(tx, { type: 'mfa_removed', at: now, origin, userId: user.id, username: user.username, detail: { method: 'totp', confirmed_with: used } });
    }
    return used;
  });
  if (!method) {
    if (!(await findTotp(db, user.id))?.activated_at) {
      await limiter.succeeded(account, origin.ip, now);
      throw new AppError('conflict', 'No authenticator is active.');
    }
    await recordAuthEvent(db, { type: 'mfa_failed', at: now, origin, userId: user.id, username: user.username, detail: { reason: 'wrong_code', step: 'disable' } });
    throw new AppError('invalid_mfa_code', 'The code is wrong or already used.');
  }
  await limiter.succeeded(account, origin.ip, now);
}

/**
 * Ten new recovery codes in place of the earlier ones, shown this once. Needs the password (counted
 * by the login limits): codes that skip the authenticator are worth as much as the password itself.
 */
export async function newRecoveryCodes({ db, clock }: Deps, limiter: LoginLimiter, userId: number, password: string, origin: RequestOrigin): Promise<string[]> {
  const user = await activeUser(db, userId);
  const now = clock.now();
  if (!(await findTotp(db, user.id))?.activated_at) throw new AppError('conflict', 'Recovery codes go with an active authenticator; activate one first.');
  await proveCurrentPassword(db, limiter, user, password, origin, now, 'The password is wrong.');
  return replaceRecoveryCodesAudited({ db }, user, now, origin);
}

/** For flows that have just proven the user (the portal right after activation). */
export async function replaceRecoveryCodesAudited({ db }: Pick<FeatureDeps, 'db'>, user: Pick<User, 'id' | 'username'>, now: Date, origin: RequestOrigin): Promise<string[]> {
  return db.transaction(async (tx) => {
    const codes = await replaceRecoveryCodes(tx, user.id, now);
    await recordAuthEvent(tx, { type: 'mfa_recovery_codes_replaced', at: now, origin, userId: user.id, username: user.username, detail: { count: codes.length } });
    return codes;
  });
}
