import { timingSafeEqual } from 'node:crypto';
import { findUserById, type User } from '../../accounts/accounts.repository.js';
import type { FeatureDeps } from '../../deps.js';
import { AppError, rateLimited } from '../../http/errors.js';
import { recordAuthEvent, type RequestOrigin } from '../auth-events.repository.js';
import type { VerifiedProof } from '../dpop-proof.js';
import type { LoginGuards } from '../login-guards.js';
import { openSession } from '../open-session.js';
import type { TokenPair } from '../token-pair.js';
import { secondFactorRequiredFor } from './mfa-policy.js';
import { createChallenge, deleteChallenge, failChallenge, findChallenge, passwordCheckOf, secondFactorsOf, type Challenge } from './mfa.repository.js';
import { useSecondFactorCode } from './second-factor-code.js';

/** Wrong codes one mfa_token takes before it dies (the login limits apply as well). */
export const MFA_TOKEN_MAX_FAILURES = 5;

/** What a login with the right password still needs: nothing, a TOTP code, a passkey (portal), or an enrolment first. */
export type SecondFactorNeed = 'none' | 'totp' | 'passkey' | 'enroll';

export async function secondFactorOf({ db, config }: Pick<FeatureDeps, 'db' | 'config'>, user: User): Promise<SecondFactorNeed> {
  // Both factors in one statement: a login asks this after every right password.
  const factors = await secondFactorsOf(db, user.id);
  if (factors.totp) return 'totp';
  // A passkey is a second factor too, so the password alone opens no session. The API cannot take a
  // passkey (WebAuthn needs a browser): such a user finishes in the portal, or adds an authenticator
  // app for API logins. Nor may the password alone enrol one when a role requires a second factor:
  // whoever knew it would get past the passkey.
  if (factors.passkey) return 'passkey';
  return secondFactorRequiredFor(config, user.role) ? 'enroll' : 'none';
}

/**
 * The 401 a login answers after the right password when a second factor is needed: mfa_required
 * with a single-use mfa_token for POST /api/v2/auth/mfa/verify, or (a role that requires one, none
 * enrolled) mfa_enrollment_required with a token that only enrols (no session is opened).
 */
export async function secondFactorChallenge(
  { db, config }: Pick<FeatureDeps, 'db' | 'config'>,
  user: User,
  need: Exclude<SecondFactorNeed, 'none'>,
  verifiedHash: string,
  origin: RequestOrigin,
  now: Date,
): Promise<AppError> {
  const purpose = need === 'enroll' ? 'enroll' : 'login';
  const token = await createChallenge(db, { userId: user.id, purpose, passwordHash: verifiedHash, now, ttlSeconds: config.MFA_TOKEN_TTL_SECONDS });
  await recordAuthEvent(db, { type: 'mfa_challenged', at: now, origin, userId: user.id, username: user.username, detail: { purpose } });
  return secondFactorProblem(need, { mfa_token: token, expires_in: config.MFA_TOKEN_TTL_SECONDS });
}

/** The 401 of secondFactorChallenge for a token made (also the OpenAPI document's examples). */
export function secondFactorProblem(need: Exclude<SecondFactorNeed, 'none'>, extensions: { mfa_token: string; expires_in: number }): AppError {
  if (need === 'totp') return new AppError('mfa_required', 'Send a code of your authenticator app (or a recovery code) with the mfa_token to POST /api/v2/auth/mfa/verify.', { extensions: { ...extensions, methods: ['totp', 'recovery_code'] } });
  if (need === 'passkey') return new AppError('mfa_required', 'Your second factor is a passkey: sign in through the portal (the API takes authenticator app codes only; add one there to log in here).', { extensions: { ...extensions, methods: ['passkey'] } });
  return new AppError('mfa_enrollment_required', 'Your role requires a second factor: enrol an authenticator app with the mfa_token (POST /api/v2/auth/mfa/totp, then …/activate), then log in again.', { extensions });
}

export const invalidMfaToken = () => new AppError('invalid_mfa_token', 'The mfa_token is invalid, used or expired; log in again.');

/** The user of a live challenge whose password is still the one verified; the token's 401 otherwise. */
export async function challengeUser(db: FeatureDeps['db'], challenge: Challenge | undefined): Promise<User> {
  const user = challenge && (await findUserById(db, challenge.user_id));
  if (!challenge || !user || !timingSafeEqual(passwordCheckOf(user.password_hash), challenge.password_check)) throw invalidMfaToken();
  return user;
}

/**
 * The second step of a login: an mfa_token and a code answer the login result. The code counts
 * towards the login limits of the user and the address like a password (a refusal is the same
 * 429); a wrong one is a failure on the token too, which dies after MFA_TOKEN_MAX_FAILURES. A right
 * one consumes the token and the code in one transaction, then the session opens as after a
 * password (the user's state read again under its lock).
 */
export async function verifyLoginCode(deps: FeatureDeps, guards: LoginGuards, input: { mfaToken: string; code: string; origin: RequestOrigin; dpop?: VerifiedProof }): Promise<TokenPair> {
  const { db, clock, keys } = deps;
  const { origin } = input;
  const now = clock.now();
  const user = await challengeUser(db, await findChallenge(db, input.mfaToken, 'login', now));
  const account = `user:${user.id}`;
  const decision = await guards.limiter.attempt(account, origin.ip, now);
  if (!decision.allowed) {
    await guards.refusals.record({ at: now, origin, userId: user.id, username: user.username, retryAfterSeconds: decision.retryAfterSeconds });
    throw rateLimited(decision.retryAfterSeconds, 'Too many failed attempts');
  }
  const method = await db.transaction(async (tx) => {
    // Locked: of two requests with one token, the second waits and then finds it gone.
    if (!(await findChallenge(tx, input.mfaToken, 'login', now, true))) return 'token_gone' as const;
    const used = await useSecondFactorCode(tx, keys.mfaSecretsKey, user.id, input.code, now);
    if (used) await deleteChallenge(tx, input.mfaToken);
    else await failChallenge(tx, input.mfaToken, MFA_TOKEN_MAX_FAILURES);
    return used;
  });
  if (method === 'token_gone') throw invalidMfaToken();
  if (!method) {
    await recordAuthEvent(db, { type: 'mfa_failed', at: now, origin, userId: user.id, username: user.username, detail: { reason: 'wrong_code', step: 'login' } });
    throw new AppError('invalid_mfa_code', 'The code is wrong or already used.');
  }
  // Takes back this code's reservation and the one the password left standing (login.service.ts).
  await guards.limiter.succeeded(account, origin.ip, now);
  await guards.limiter.succeeded(account, origin.ip, now);
  await recordAuthEvent(db, { type: 'mfa_used', at: now, origin, userId: user.id, username: user.username, detail: { method } });
  return openSession(deps, user, user.password_hash, origin, now, { auditDetail: { second_factor: method }, dpop: input.dpop });
}
