import { randomUUID } from 'node:crypto';
import type { User } from '../accounts/accounts.repository.js';
import { inactiveTenantOf } from '../accounts/tenant-state.js';
import type { FeatureDeps } from '../deps.js';
import { AppError, rateLimited } from '../http/errors.js';
import { lockAccount } from './account-lock.js';
import { recordAuthEvent, type RequestOrigin } from './auth-events.repository.js';
import type { VerifiedProof } from './dpop-proof.js';
import { recordProof, replayedProof } from './dpop-replay.js';
import { findLoginAccount } from './login-account.js';
import { secondFactorChallenge, secondFactorOf } from './mfa/mfa-login.js';
import { createLoginLimiter, type LoginLimiter } from './login-limits.js';
import { needsRehash, reservePasswordWork } from './passwords.js';
import { hashRefreshToken, newRefreshToken } from './refresh-tokens.js';
import { RefusedLoginAudit } from './refused-login-audit.js';
import { insertRefreshToken, insertSession } from './sessions.repository.js';
import { refreshExpiry, tokenPair, type TokenPair } from './token-pair.js';

export interface LoginInput {
  username: string;
  password: string;
  origin: RequestOrigin;
  /** A valid DPoP proof sent with the login: the session is bound to its key. */
  dpop?: VerifiedProof;
}

// One body for every "no" before the password is known to be right: unknown user, wrong
// password, and an inactive user with a wrong password are indistinguishable.
const invalidCredentials = () => new AppError('invalid_credentials', 'The user name or the password is wrong.');

/** What guards the login route: the limits, and the audit of refusals that they cause. */
export interface LoginGuards {
  limiter: LoginLimiter;
  refusals: RefusedLoginAudit;
  /** Writes the last open refusal counts and closes the limiter's store. */
  close(): Promise<void>;
}

/** One set per process door that logs users in (the API and the portal share the same counters). */
export function createLoginGuards(deps: FeatureDeps): LoginGuards {
  const limiter = createLoginLimiter({ config: deps.config, db: deps.db, counterKey: deps.keys.loginCounterKey });
  const refusals = new RefusedLoginAudit(deps.db, deps.clock, deps.config.LOGIN_REFUSAL_AUDIT_WINDOW_SECONDS * 1000);
  return {
    limiter,
    refusals,
    async close() {
      try {
        await refusals.close();
      } finally {
        await limiter.close();
      }
    },
  };
}

/**
 * Login: the user lookup (which also gives the account the limits count), the limiter (no
 * password is verified while cooling down), then the password (a dummy verification for unknown
 * users, so timing tells nothing), and only after a correct password whether the user and its
 * seller or marketplace are active, read under their lock in the transaction that opens the session
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
  return openSession(deps, user, (stored) => stored === verifiedHash, origin, now, { dpop: input.dpop });
}

/**
 * Opens the session of a user whose credentials were verified (a password, and a second factor
 * when one is needed): the user's state is read under its lock and must still be what was
 * verified (`sameCredentials` of the stored password hash), then the session and its first
 * refresh token are written with the audit row. A DPoP proof of the request binds the session.
 */
export async function openSession(
  deps: FeatureDeps,
  user: User,
  sameCredentials: (storedPasswordHash: string) => boolean,
  origin: RequestOrigin,
  now: Date,
  options: { auditDetail?: Record<string, unknown>; dpop?: VerifiedProof } = {},
): Promise<TokenPair> {
  const { db, config } = deps;
  const { auditDetail, dpop } = options;
  const sessionId = randomUUID();
  const refreshToken = newRefreshToken();
  // The password was verified outside this transaction (it is slow), so the user's state is read
  // under its lock: a reset or deactivation that committed meanwhile refuses the login, one that
  // comes later revokes the session (account-lock.ts).
  const refusal = await db.transaction(async (tx) => {
    const account = await lockAccount(tx, user.id);
    if (!account) return 'user_deleted';
    if (!sameCredentials(account.password_hash)) return 'password_changed';
    if (!account.active) return 'user_inactive';
    if (!account.tenant_active) return 'tenant_inactive';
    // Recorded only now, after a correct password: nobody fills the replay store without one.
    if (dpop && !(await recordProof(tx, dpop))) return 'dpop_proof_replayed';
    const dpopJkt = dpop?.jkt ?? null;
    await insertSession(tx, { id: sessionId, userId: user.id, now, userAgent: origin.userAgent, ip: origin.ip, dpopJkt });
    await insertRefreshToken(tx, {
      hash: hashRefreshToken(refreshToken),
      sessionId,
      userId: user.id,
      parentId: null,
      issuedAt: now,
      expiresAt: refreshExpiry(now, config.REFRESH_TOKEN_TTL_SECONDS),
      dpopJkt,
    });
    await recordAuthEvent(tx, { type: 'login_succeeded', at: now, origin, userId: user.id, username: user.username, sessionId, ...(auditDetail ? { detail: auditDetail } : {}) });
    return undefined;
  });
  if (refusal) {
    // A deleted user's id can no longer be recorded (the audit refers to users).
    const who = refusal === 'user_deleted' ? {} : { userId: user.id, username: user.username };
    await recordAuthEvent(db, { type: 'login_failed', at: now, origin, ...who, detail: { reason: refusal } });
    if (refusal === 'user_inactive') throw new AppError('user_inactive', 'The user is disabled.');
    if (refusal === 'tenant_inactive') throw new AppError('user_inactive', `The user's ${inactiveTenantOf(user.role)} is deactivated.`);
    if (refusal === 'dpop_proof_replayed') throw replayedProof();
    throw invalidCredentials();
  }
  return tokenPair(deps, user, sessionId, refreshToken, now, dpop?.jkt ?? null);
}
