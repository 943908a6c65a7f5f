import type { FeatureDeps } from '../deps.js';
import { AppError } from '../http/errors.js';
import { recordAuthEvent, type RequestOrigin } from './auth-events.repository.js';
import { invalidDpopProof, type VerifiedProof } from './dpop-proof.js';
import { recordProof, replayedProof } from './dpop-replay.js';
import { hashRefreshToken, isWellFormedRefreshToken, successorOf } from './refresh-tokens.js';
import {
  claimReplayAudit,
  bindSession,
  isActiveSuccessor,
  lockRefreshToken,
  revokeAllOfUser,
  rotateRefreshToken,
  touchSession,
  type LockedRefreshToken,
} from './sessions.repository.js';
import { refreshExpiry, tokenPair, type TokenOwner, type TokenPair } from './token-pair.js';

type Outcome =
  | { kind: 'issued'; owner: TokenOwner; sessionId: string; refreshToken: string; dpopJkt: string | null }
  | { kind: 'invalid' }
  | { kind: 'proof_required' }
  | { kind: 'proof_replayed' }
  | { kind: 'reuse' }
  | { kind: 'inactive' };

/** A replay of a token of an ended session writes at most one audit row per session in this time. */
const REPLAY_AUDIT_INTERVAL_SECONDS = 3600;

const invalidRefreshToken = () => new AppError('invalid_refresh_token', 'The refresh token is invalid, expired or revoked; log in again.');

/**
 * Rotation in one transaction with the presented token's row locked, so that parallel refreshes
 * of one token queue: the first rotates it, the others find it revoked. The transaction returns
 * an outcome instead of throwing, because the reuse branch's revocations must commit although the
 * request fails.
 */
export async function refresh(deps: FeatureDeps, presented: string, origin: RequestOrigin, dpop?: VerifiedProof): Promise<TokenPair> {
  const { db, config, keys, clock } = deps;
  if (!isWellFormedRefreshToken(presented)) throw invalidRefreshToken();
  const now = clock.now();

  const outcome = await db.transaction(async (tx): Promise<Outcome> => {
    const row = await lockRefreshToken(tx, hashRefreshToken(presented));
    if (!row) return { kind: 'invalid' };
    // A token issued bound is worth nothing without the key, whatever its state: refused before
    // anything else, and nothing changes (not rotated, no reuse sweep), so that someone who stole
    // only the token can neither use it nor end the user's sessions with it.
    if (row.token_dpop_jkt !== null && dpop?.jkt !== row.token_dpop_jkt) return { kind: 'proof_required' };
    // A token issued before its session was bound (a Bearer session that a refresh with a proof
    // bound) was never bound: once rotated, presenting it again is reuse as for any Bearer token,
    // so that a thief who bound a stolen Bearer session to a key of its own is still caught when
    // the owner presents the rotated token. Only the still-active token of a bound session (never
    // the case: binding rotates it) would need the key.
    const sessionKeyMissing = row.dpop_jkt !== null && dpop?.jkt !== row.dpop_jkt;
    if (sessionKeyMissing && !row.revoked_at) return { kind: 'proof_required' };
    // A disabled user (or one of a deactivated seller or marketplace) is told so, whatever the
    // token's state: the deactivation revoked every token of the user, and presenting one of them
    // afterwards is a stale client, not a stolen token (nothing is left to revoke either).
    if (!row.user_active) return { kind: 'inactive' };
    const owner = ownerOf(row);
    const successor = successorOf(keys.refreshSuccessorKey, presented);

    if (row.revoked_at) {
      // The grace answer hands out the successor, bound to the session's key: only with that key.
      // It repeats the successor already issued, so it binds nothing: a proof here would bind the
      // owner's Bearer session to the key of whoever replays the token.
      if (!sessionKeyMissing && (await withinGrace(tx, row, successor, now, config.REFRESH_REUSE_GRACE_SECONDS))) {
        if (dpop && !(await recordProof(tx, dpop))) return { kind: 'proof_replayed' };
        await touchSession(tx, row.session_id, now);
        await recordAuthEvent(tx, { type: 'refresh_rotated', at: now, origin, userId: row.user_id, username: row.username, sessionId: row.session_id, detail: { grace_replay: true } });
        return { kind: 'issued', owner, sessionId: row.session_id, refreshToken: successor, dpopJkt: row.dpop_jkt };
      }
      // A token of a session that has ended (revoked for reuse already, by logout, revoke-all, a
      // password change or reset, a deactivation) is merely invalid: that ending revoked the whole
      // family, so nothing of it is left to steal, and revoking the user's sessions again would
      // only let whoever holds one old token end every later login of the user, again and again.
      if (row.session_revoked_at) {
        if (await claimReplayAudit(tx, row.session_id, now, REPLAY_AUDIT_INTERVAL_SECONDS)) {
          await recordAuthEvent(tx, { type: 'refresh_replay_refused', at: now, origin, userId: row.user_id, username: row.username, sessionId: row.session_id, detail: { previous_reason: row.revoked_reason } });
        }
        return { kind: 'invalid' };
      }
      // The family is still open, so two parties hold its tokens: the spec's breach.
      const revoked = await revokeAllOfUser(tx, row.user_id, 'security_breach_token_reuse', now);
      // The breach's row is this session's row of the hour: replays right after it write none.
      await claimReplayAudit(tx, row.session_id, now, REPLAY_AUDIT_INTERVAL_SECONDS);
      await recordAuthEvent(tx, {
        type: 'refresh_reuse_detected',
        at: now,
        origin,
        userId: row.user_id,
        username: row.username,
        sessionId: row.session_id,
        detail: { previous_reason: row.revoked_reason, revoked_tokens: revoked },
      });
      return { kind: 'reuse' };
    }
    // An expired token is simply no longer valid: nothing is revoked.
    if (row.expires_at.getTime() <= now.getTime()) return { kind: 'invalid' };
    if (!(await acceptProof(tx, row, dpop))) return { kind: 'proof_replayed' };

    // Revoke, successor, session touch and audit event: one statement (sessions.repository.ts).
    await rotateRefreshToken(
      tx,
      {
        presentedId: row.id,
        successor: {
          hash: hashRefreshToken(successor),
          sessionId: row.session_id,
          userId: row.user_id,
          issuedAt: now,
          expiresAt: refreshExpiry(now, config.REFRESH_TOKEN_TTL_SECONDS),
          dpopJkt: dpop?.jkt ?? null,
        },
      },
      { type: 'refresh_rotated', at: now, origin, userId: row.user_id, username: row.username, sessionId: row.session_id },
    );
    return { kind: 'issued', owner, sessionId: row.session_id, refreshToken: successor, dpopJkt: dpop?.jkt ?? null };
  });

  switch (outcome.kind) {
    case 'issued':
      return tokenPair(deps, outcome.owner, outcome.sessionId, outcome.refreshToken, now, outcome.dpopJkt);
    case 'proof_required':
      throw invalidDpopProof('This refresh token is bound to a DPoP key: send a DPoP proof signed with that key.');
    case 'proof_replayed':
      throw replayedProof();
    case 'inactive':
      throw new AppError('user_inactive', 'The user is disabled.');
    case 'invalid':
    case 'reuse':
      throw invalidRefreshToken();
  }
}

/**
 * A refresh with a proof, of a token that will be rotated: the proof is recorded (a replay is
 * refused before anything changes), and a Bearer session is bound to its key from now on (RFC 9449
 * lets a client start sending proofs on a refresh).
 */
async function acceptProof(tx: Parameters<typeof lockRefreshToken>[0], row: LockedRefreshToken, dpop: VerifiedProof | undefined): Promise<boolean> {
  if (!dpop) return true;
  if (!(await recordProof(tx, dpop))) return false;
  if (row.dpop_jkt === null) await bindSession(tx, row.session_id, dpop.jkt);
  return true;
}

/**
 * The grace option: the immediate predecessor, presented again shortly after its rotation,
 * yields the same successor, provided that successor is still active (not itself rotated).
 */
async function withinGrace(tx: Parameters<typeof lockRefreshToken>[0], row: LockedRefreshToken, successor: string, now: Date, graceSeconds: number): Promise<boolean> {
  if (graceSeconds <= 0 || row.revoked_reason !== 'rotated' || !row.revoked_at) return false;
  if (now.getTime() - row.revoked_at.getTime() > graceSeconds * 1000) return false;
  return isActiveSuccessor(tx, row.id, hashRefreshToken(successor), now);
}

function ownerOf(row: LockedRefreshToken): TokenOwner {
  return { id: row.user_id, username: row.username, seller_id: row.seller_id, role: row.role, marketplace_code: row.marketplace_code };
}
