import { randomUUID } from 'node:crypto';
import type { User } from '../accounts/accounts.repository.js';
import { inactiveTenantOf } from '../accounts/tenant-state.js';
import type { FeatureDeps } from '../deps.js';
import { AppError } from '../http/errors.js';
import { recordAuthEvent, type RequestOrigin } from './auth-events.repository.js';
import type { VerifiedProof } from './dpop-proof.js';
import { replayedProof } from './dpop-replay.js';
import { hashRefreshToken, newRefreshToken } from './refresh-tokens.js';
import { insertSessionWithToken } from './sessions.repository.js';
import { refreshExpiry, tokenPair, type TokenPair } from './token-pair.js';

// One body for every "no" before the password is known to be right: unknown user, wrong
// password, and an inactive user with a wrong password are indistinguishable.
export const invalidCredentials = () => new AppError('invalid_credentials', 'The user name or the password is wrong.');

/**
 * Opens the session of a user whose credentials were verified (a password, and a second factor
 * when one is needed): the user's state is read under its lock and must still be what was
 * verified (`verifiedPasswordHash`, the stored hash the password was checked against; null when no
 * password was), then the session and its first refresh token are written with the audit row. A
 * DPoP proof of the request binds the session.
 */
export async function openSession(
  deps: FeatureDeps,
  user: User,
  verifiedPasswordHash: string | null,
  origin: RequestOrigin,
  now: Date,
  options: { auditDetail?: Record<string, unknown>; dpop?: VerifiedProof } = {},
): Promise<TokenPair> {
  const { db, config } = deps;
  const { auditDetail, dpop } = options;
  const sessionId = randomUUID();
  const refreshToken = newRefreshToken();
  const dpopJkt = dpop?.jkt ?? null;
  // The password was verified before (it is slow), so the user's state is read under its lock in
  // the statement that writes the session: a reset or deactivation that committed meanwhile refuses
  // the login, one that comes later revokes the session (account-lock.ts, sessions.repository.ts).
  const refusal = await insertSessionWithToken(
    db,
    { id: sessionId, userId: user.id, now, userAgent: origin.userAgent, ip: origin.ip, dpopJkt },
    { hash: hashRefreshToken(refreshToken), expiresAt: refreshExpiry(now, config.REFRESH_TOKEN_TTL_SECONDS) },
    { type: 'login_succeeded', at: now, origin, userId: user.id, username: user.username, sessionId, ...(auditDetail ? { detail: auditDetail } : {}) },
    { passwordHash: verifiedPasswordHash, proof: dpop ? { key: dpop.replayKey, until: dpop.replayUntil } : null },
  );
  if (refusal) {
    // A deleted user's id can no longer be recorded (the audit refers to users).
    const who = refusal === 'user_deleted' ? {} : { userId: user.id, username: user.username };
    await recordAuthEvent(db, { type: 'login_failed', at: now, origin, ...who, detail: { reason: refusal } });
    if (refusal === 'user_inactive') throw new AppError('user_inactive', 'The user is disabled.');
    if (refusal === 'tenant_inactive') throw new AppError('user_inactive', `The user's ${inactiveTenantOf(user.role)} is deactivated.`);
    if (refusal === 'dpop_proof_replayed') throw replayedProof();
    throw invalidCredentials();
  }
  return tokenPair(deps, user, sessionId, refreshToken, now, dpopJkt);
}
