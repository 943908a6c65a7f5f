import type { Database, Queryable } from '../db/database.js';
import { recordAuthEvent, type AuthEvent, type RequestOrigin } from './auth-events.repository.js';
import type { UserPrincipal as Principal } from '../accounts/principal.js';
import { refuseIfUserGone } from './authenticate.js';
import { lockSessionsOf, revokeAllOfUser, revokeSession } from './sessions.repository.js';

type Transactional = Pick<Database, 'transaction'>;

/** The audit row of an action of the token's user: 401 rather than 500 when that user was deleted since the token was issued. */
const recordForUser = (tx: Queryable, event: AuthEvent) => recordAuthEvent(tx, event).catch(refuseIfUserGone('auth_events_user_id_fkey'));

/** Logout: the current session and its refresh token end; the access token lives on until it expires. */
export async function logout(db: Transactional, principal: Principal, origin: RequestOrigin, now: Date): Promise<void> {
  await db.transaction(async (tx) => {
    await lockSessionsOf(tx, principal.userId);
    const { wasActive } = await revokeSession(tx, principal.sessionId, principal.userId, 'logout', now);
    await recordForUser(tx, { type: 'logout', at: now, origin, userId: principal.userId, sessionId: principal.sessionId, detail: { session_was_active: wasActive } });
  });
}

export async function revokeAll(db: Transactional, principal: Principal, origin: RequestOrigin, now: Date): Promise<void> {
  await db.transaction(async (tx) => {
    await lockSessionsOf(tx, principal.userId);
    const revoked = await revokeAllOfUser(tx, principal.userId, 'revoke_all', now);
    await recordForUser(tx, { type: 'revoke_all', at: now, origin, userId: principal.userId, sessionId: principal.sessionId, detail: { revoked_tokens: revoked } });
  });
}

/** Returns false when the session is not one of the user's (the route answers 404). */
export async function revokeOneSession(db: Transactional, principal: Principal, sessionId: string, origin: RequestOrigin, now: Date): Promise<boolean> {
  return db.transaction(async (tx) => {
    await lockSessionsOf(tx, principal.userId);
    const { found, wasActive } = await revokeSession(tx, sessionId, principal.userId, 'session_revoked', now);
    if (found && wasActive) {
      await recordForUser(tx, { type: 'session_revoked', at: now, origin, userId: principal.userId, sessionId, detail: { by_session: principal.sessionId } });
    }
    return found;
  });
}
