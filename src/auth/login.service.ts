import type { FeatureDeps } from '../deps.js';
import { rateLimited } from '../http/errors.js';
import { recordAuthEvent, type RequestOrigin } from './auth-events.repository.js';
import type { VerifiedProof } from './dpop-proof.js';
import { findLoginAccount } from './login-account.js';
import type { LoginGuards } from './login-guards.js';
import { secondFactorChallenge, secondFactorOf } from './mfa/mfa-login.js';
import { invalidCredentials, openSession } from './open-session.js';
import { needsRehash, reservePasswordWork } from './passwords.js';
import type { TokenPair } from './token-pair.js';

export interface LoginInput {
  username: string;
  password: string;
  origin: RequestOrigin;
  /** A valid DPoP proof sent with the login: the session is bound to its key. */
  dpop?: VerifiedProof;
}

/**
 * Login: the user lookup (which also gives the account the limits count), the limiter (no
 * password is verified while cooling down), then the password (a dummy verification for unknown
 * users, so timing tells nothing), and only after a correct password whether the user and its
 * seller or marketplace are active, read under their lock in the statement that opens the session
 * with its first refresh token.
 */
export async function login(deps: FeatureDeps, guards: LoginGuards, input: LoginInput): Promise<TokenPair> {
  const { db, clock } = deps;
  const { limiter } = guards;
  const { origin } = input;
  const now = clock.now();

  const { user, limiterAccount } = await findLoginAccount(db, input.username);
  // A slot for the password check, before the limits count this attempt as a failure: a login
  // refused for want of one (503, ARGON2_MAX_IN_PROGRESS) must not cool its user down.
  const work = reservePasswordWork();
  // The hash the password was verified against, as stored now.
  let verifiedHash: string;
  let secondFactor: Awaited<ReturnType<typeof secondFactorOf>>;
  try {
    const decision = await limiter.attempt(limiterAccount, origin.ip, now);
    if (!decision.allowed) {
      await guards.refusals.record({ at: now, origin, userId: user?.id ?? null, username: user?.username ?? null, retryAfterSeconds: decision.retryAfterSeconds });
      throw rateLimited(decision.retryAfterSeconds, 'Too many failed logins');
    }

    if (!user) {
      await work.verifyDummy(input.password);
      // The typed name is not stored: people type passwords into the user name field.
      await recordAuthEvent(db, { type: 'login_failed', at: now, origin, detail: { reason: 'unknown_user' } });
      throw invalidCredentials();
    }
    if (!(await work.verify(user.password_hash, input.password))) {
      const reason = user.active ? 'wrong_password' : 'wrong_password_inactive_user';
      await recordAuthEvent(db, { type: 'login_failed', at: now, origin, userId: user.id, username: user.username, detail: { reason } });
      throw invalidCredentials();
    }
    // With a second factor pending, the attempt stays counted as a failure until its code is right
    // (src/auth/mfa/mfa-login.ts): a right password alone does not reset the limits for code guesses.
    secondFactor = await secondFactorOf(deps, user);
    if (secondFactor !== 'totp') await limiter.succeeded(limiterAccount, origin.ip, now);
    verifiedHash = user.password_hash;
    if (needsRehash(user.password_hash)) {
      const rehashed = await work.hash(input.password);
      const { rowCount } = await db.query(`UPDATE users SET password_hash = $2, updated_at = now() WHERE id = $1 AND password_hash = $3`, [user.id, rehashed, user.password_hash]);
      if (rowCount === 1) verifiedHash = rehashed;
    }
  } finally {
    work.release();
  }

  if (secondFactor !== 'none') throw await secondFactorChallenge(deps, user, secondFactor, verifiedHash, origin, now);
  return openSession(deps, user, verifiedHash, origin, now, { dpop: input.dpop });
}
