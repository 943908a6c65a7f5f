import type { Queryable } from '../db/database.js';
import { lockedAccountSql, type LockedAccount } from './account-lock.js';
import { authEventInsert, type AuthEvent } from './auth-events.repository.js';
import { proofInsertSql } from './dpop-replay.js';

export type RevocationReason = 'rotated' | 'security_breach_token_reuse' | 'logout' | 'revoke_all' | 'session_revoked' | 'password_changed' | 'user_deactivated' | 'tenant_deactivated';

export interface LockedRefreshToken {
  id: number;
  session_id: string;
  user_id: number;
  expires_at: Date;
  revoked_at: Date | null;
  revoked_reason: RevocationReason | null;
  username: string;
  seller_id: number | null;
  role: 'seller' | 'marketplace' | 'admin';
  marketplace_code: string | null;
  user_active: boolean;
  /** When the token's session (its family: the login and every rotation from it) ended; null while open. */
  session_revoked_at: Date | null;
  /** The DPoP key thumbprint the token's session is bound to; null for a Bearer session. */
  dpop_jkt: string | null;
  /** The thumbprint this token was issued bound to; null when issued to a client without a proof (also in a session bound later). */
  token_dpop_jkt: string | null;
}

export interface SessionRow {
  id: string;
  created_at: Date;
  last_used_at: Date;
  user_agent: string | null;
  ip: string | null;
}

/** Binds a Bearer session to a DPoP key (its first refresh with a proof); a bound session keeps its key. */
export async function bindSession(tx: Queryable, sessionId: string, jkt: string): Promise<void> {
  await tx.query(`UPDATE sessions SET dpop_jkt = $2 WHERE id = $1 AND dpop_jkt IS NULL`, [sessionId, jkt]);
}

// Namespace of the per-user advisory lock of sessions (pg_advisory_xact_lock(int4, int4)).
const SESSIONS_LOCK_NAMESPACE = 72_001;

/**
 * Makes the transactions that rotate or end a user's refresh tokens take turns, until this one
 * ends: a refresh, a logout, a revoke-all, ending one session. Each then runs its statements after
 * the previous one committed and sees what it made: a revocation's snapshot taken while a refresh
 * was committing missed the successor, which lived on in a revoked session (and the two could
 * deadlock, each updating the token and the session in the other's order). Taken before any row
 * lock. The writers that change the user's row (a password reset, a deactivation) do not take it:
 * they meet a refresh on that row instead (account-lock.ts).
 */
export async function lockSessionsOf(tx: Queryable, userId: number): Promise<void> {
  await tx.query(`SELECT pg_advisory_xact_lock($1, $2)`, [SESSIONS_LOCK_NAMESPACE, userId]);
}

/**
 * The token row (with its user), locked until the transaction ends, after the user's sessions lock
 * (lockSessionsOf): a reuse sweep then also sees every successor that a concurrent rotation of
 * another of the user's tokens created, instead of missing one that commits mid-sweep.
 */
export async function lockRefreshToken(tx: Queryable, hash: Buffer): Promise<LockedRefreshToken | undefined> {
  // The owner, its sessions lock (lockSessionsOf's) and its account lock in one round trip: the
  // sessions lock is taken for the row found (in the subquery, OFFSET 0 keeps it there), then the
  // account lock (account-lock.ts) for that row, in this order (the lateral join runs after its
  // outer row). This statement's snapshot is older than the sessions lock, but what it reads is
  // the user id, which never changes, and the account's rows, which their locks return as last
  // committed; the statements below start after both locks, so they see what a previous holder of
  // either committed. Before the token: a reset or deactivation racing this refresh either is seen
  // here or revokes the successor. No row: no such token, or its user is gone.
  const owner = await tx.query<LockedAccount & { user_id: number }>(
    `SELECT o.user_id, a.* FROM (
       SELECT user_id, pg_advisory_xact_lock($2, user_id) FROM refresh_tokens WHERE token_hash = $1 OFFSET 0
     ) AS o CROSS JOIN LATERAL (${lockedAccountSql('o.user_id')}) AS a`,
    [hash, SESSIONS_LOCK_NAMESPACE],
    { prepare: true },
  );
  const account = owner.rows[0];
  if (!account) return undefined;
  // The session's state needs no lock of its own: whatever ends it holds the sessions lock above or
  // updates the rows that the account lock holds.
  const { rows } = await tx.query<Omit<LockedRefreshToken, 'user_active'>>(
    `SELECT rt.id, rt.session_id, rt.user_id, rt.expires_at, rt.revoked_at, rt.revoked_reason,
            u.username, u.seller_id, u.role, u.marketplace_code, s.revoked_at AS session_revoked_at, s.dpop_jkt,
            rt.dpop_jkt AS token_dpop_jkt
       FROM refresh_tokens rt JOIN users u ON u.id = rt.user_id JOIN sessions s ON s.id = rt.session_id
      WHERE rt.token_hash = $1
        FOR UPDATE OF rt`,
    [hash],
    { prepare: true },
  );
  // A user of a deactivated seller or marketplace is refused like a disabled user.
  return rows[0] && { ...rows[0], user_active: account.active && account.tenant_active };
}

/** Whether the token with this hash is the still-usable direct successor of `parentId`. */
export async function isActiveSuccessor(tx: Queryable, parentId: number, hash: Buffer, now: Date): Promise<boolean> {
  const { rowCount } = await tx.query(
    `SELECT 1 FROM refresh_tokens WHERE token_hash = $1 AND parent_id = $2 AND revoked_at IS NULL AND expires_at > $3`,
    [hash, parentId, now],
  );
  return rowCount > 0;
}

/**
 * A rotation's writes in one statement (one round trip instead of four): the presented token
 * revoked as rotated, its successor inserted, the session touched, the audit event recorded. The
 * parts touch different rows (the successor is a new row), so running them as one statement's
 * parts changes nothing of what each does; the transaction holds the token's row lock
 * (lockRefreshToken) as before.
 */
export async function rotateRefreshToken(
  tx: Queryable,
  rotation: { presentedId: number; successor: { hash: Buffer; sessionId: string; userId: number; issuedAt: Date; expiresAt: Date; dpopJkt: string | null } },
  event: AuthEvent,
): Promise<void> {
  const { presentedId, successor } = rotation;
  const audit = authEventInsert(event, 8);
  await tx.query(
    `WITH revoked AS (
       UPDATE refresh_tokens SET revoked_at = $1, revoked_reason = 'rotated' WHERE id = $2 AND revoked_at IS NULL
     ), successor AS (
       INSERT INTO refresh_tokens (token_hash, session_id, user_id, parent_id, issued_at, expires_at, dpop_jkt) VALUES ($3, $4, $5, $2, $1, $6, $7)
     ), touched AS (
       UPDATE sessions SET last_used_at = GREATEST(last_used_at, $1) WHERE id = $4
     )
     ${audit.sql}`,
    [successor.issuedAt, presentedId, successor.hash, successor.sessionId, successor.userId, successor.expiresAt, successor.dpopJkt, ...audit.params],
    { prepare: true },
  );
}

/** Why a session was not opened: the account's state under its lock, or a replayed DPoP proof. */
export type SessionRefusal = 'user_deleted' | 'password_changed' | 'user_inactive' | 'tenant_inactive' | 'dpop_proof_replayed';

/**
 * Opens a session in one statement (one round trip instead of a transaction of four): the account
 * is locked and read (account-lock.ts), and only if it is still as verified, the DPoP proof (if
 * any) recorded, then the session, its first refresh token and the audit event inserted. Returns
 * why it opened nothing, checked in this order. The writes are new rows that depend only on the
 * locked row as last committed, so doing them in the lock's statement is the same as doing them in
 * later statements of its transaction; a reset or deactivation that comes later waits for this
 * statement's commit on the account's row, and then revokes the session.
 */
export async function insertSessionWithToken(
  db: Queryable,
  session: { id: string; userId: number; now: Date; userAgent: string | null; ip: string; dpopJkt: string | null },
  token: { hash: Buffer; expiresAt: Date },
  event: AuthEvent,
  expected: { passwordHash: string | null; proof: { key: Buffer; until: Date } | null },
): Promise<SessionRefusal | undefined> {
  const audit = authEventInsert(event, 12, 'opened');
  // The token's foreign key to the session is checked at the statement's end, when the session row is there.
  const { rows } = await db.query<{ refusal: SessionRefusal | null }>(
    `WITH account AS (
       ${lockedAccountSql('$2')}
     ), checked AS (
       SELECT CASE
                WHEN $9::text IS NOT NULL AND password_hash IS DISTINCT FROM $9::text THEN 'password_changed'
                WHEN NOT active THEN 'user_inactive'
                WHEN NOT tenant_active THEN 'tenant_inactive'
              END AS refusal
         FROM account
     ), proving AS (
       SELECT FROM checked WHERE refusal IS NULL AND $10::bytea IS NOT NULL
     ), proof AS (
       -- Recorded only now, after a correct password: nobody fills the replay store without one.
       ${proofInsertSql('$10', '$11', 'proving')} RETURNING 1
     ), opened AS (
       SELECT FROM checked WHERE refusal IS NULL AND ($10::bytea IS NULL OR EXISTS (SELECT FROM proof))
     ), session AS (
       INSERT INTO sessions (id, user_id, created_at, last_used_at, user_agent, ip, dpop_jkt) SELECT $1, $2, $3, $3, $4, $5, $6 FROM opened
     ), token AS (
       INSERT INTO refresh_tokens (token_hash, session_id, user_id, parent_id, issued_at, expires_at, dpop_jkt) SELECT $7, $1, $2, NULL, $3, $8, $6 FROM opened
     ), audit AS (
       ${audit.sql}
     )
     SELECT CASE
              WHEN NOT EXISTS (SELECT FROM account) THEN 'user_deleted'
              WHEN (SELECT refusal FROM checked) IS NOT NULL THEN (SELECT refusal FROM checked)
              WHEN NOT EXISTS (SELECT FROM opened) THEN 'dpop_proof_replayed'
            END AS refusal`,
    [
      session.id, session.userId, session.now, session.userAgent, session.ip, session.dpopJkt, token.hash, token.expiresAt,
      expected.passwordHash, expected.proof?.key ?? null, expected.proof?.until ?? null, ...audit.params,
    ],
    { prepare: true },
  );
  return rows[0]!.refusal ?? undefined;
}

/**
 * Revokes every active refresh token and session of a user in one statement, except the session
 * `keepSessionId` (a password change keeps the session that made it); returns how many tokens.
 * The portal sessions opened by the user's links go too, and the links not used yet: they have no
 * API session to revoke, and were otherwise only suspended while the user was off (back when it was
 * switched on again).
 */
export async function revokeAllOfUser(db: Queryable, userId: number, reason: RevocationReason, now: Date, keepSessionId: string | null = null): Promise<number> {
  const { rows } = await db.query<{ tokens: number }>(
    `WITH tokens AS (
       UPDATE refresh_tokens SET revoked_at = $2, revoked_reason = $3
        WHERE user_id = $1 AND revoked_at IS NULL AND session_id IS DISTINCT FROM $4::uuid
        RETURNING 1
     ), sessions AS (
       UPDATE sessions SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL AND id IS DISTINCT FROM $4::uuid RETURNING 1
     ), link_sessions AS (
       DELETE FROM portal_sessions WHERE user_id = $1 AND auth_session_id IS NULL
     ), links AS (
       DELETE FROM portal_links WHERE created_by = $1 AND used_at IS NULL
     )
     SELECT (SELECT count(*) FROM tokens)::int AS tokens`,
    [userId, now, reason, keepSessionId],
  );
  return rows[0]?.tokens ?? 0;
}

/**
 * Revokes one session of a user and its active refresh tokens. Returns whether the session
 * belongs to the user (revoked now or before), so that another user's session id is a 404.
 */
export async function revokeSession(db: Queryable, sessionId: string, userId: number, reason: RevocationReason, now: Date): Promise<{ found: boolean; wasActive: boolean }> {
  const { rows } = await db.query<{ was_active: boolean }>(
    `WITH target AS (
       SELECT id, revoked_at IS NULL AS was_active FROM sessions WHERE id = $1 AND user_id = $2
     ), tokens AS (
       UPDATE refresh_tokens SET revoked_at = $3, revoked_reason = $4
        WHERE session_id IN (SELECT id FROM target) AND revoked_at IS NULL
     ), closed AS (
       UPDATE sessions SET revoked_at = $3 WHERE id IN (SELECT id FROM target) AND revoked_at IS NULL
     )
     SELECT was_active FROM target`,
    [sessionId, userId, now, reason],
  );
  return { found: rows.length > 0, wasActive: rows[0]?.was_active ?? false };
}

/**
 * Whether a replay of one of this session's tokens may write an audit row now: true at most once
 * per `intervalSeconds` per session (the first caller of a period marks it). A replay loop then
 * writes one row an hour instead of one per request.
 */
export async function claimReplayAudit(db: Queryable, sessionId: string, now: Date, intervalSeconds: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE sessions SET replay_audited_at = $2
      WHERE id = $1 AND (replay_audited_at IS NULL OR replay_audited_at <= $2::timestamptz - make_interval(secs => $3))`,
    [sessionId, now, intervalSeconds],
  );
  return rowCount > 0;
}

export async function touchSession(tx: Queryable, sessionId: string, now: Date): Promise<void> {
  await tx.query(`UPDATE sessions SET last_used_at = GREATEST(last_used_at, $2) WHERE id = $1`, [sessionId, now]);
}

/** Sessions that can still be refreshed, most recently used first. */
export async function listActiveSessions(db: Queryable, userId: number, now: Date, limit: number): Promise<SessionRow[]> {
  const { rows } = await db.query<SessionRow>(
    `SELECT s.id, s.created_at, s.last_used_at, s.user_agent, s.ip
       FROM sessions s
      WHERE s.user_id = $1 AND s.revoked_at IS NULL
        AND EXISTS (SELECT 1 FROM refresh_tokens rt WHERE rt.session_id = s.id AND rt.revoked_at IS NULL AND rt.expires_at > $2)
      ORDER BY s.last_used_at DESC, s.id
      LIMIT $3`,
    [userId, now, limit],
  );
  return rows;
}
