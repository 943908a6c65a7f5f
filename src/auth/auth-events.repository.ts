import type { Queryable } from '../db/database.js';

export type AuthEventType =
  | 'login_succeeded'
  | 'login_failed'
  | 'login_limited'
  | 'refresh_rotated'
  | 'refresh_reuse_detected'
  | 'refresh_replay_refused'
  | 'logout'
  | 'revoke_all'
  | 'session_revoked'
  | 'password_changed'
  // Second factor (src/auth/mfa): a right password that now needs a code, enrolment, a code used
  // or refused, removal, new recovery codes.
  | 'mfa_challenged'
  | 'mfa_enrolled'
  | 'mfa_used'
  | 'mfa_failed'
  | 'mfa_removed'
  | 'mfa_recovery_codes_replaced';

/** Who made a request: kept with every audit event. */
export interface RequestOrigin {
  ip: string;
  userAgent: string | null;
}

export interface AuthEvent {
  type: AuthEventType;
  at: Date;
  origin: RequestOrigin;
  userId?: number | null;
  username?: string | null;
  sessionId?: string | null;
  /** Reasons and counts only: never a password or a token. */
  detail?: Record<string, unknown>;
}

/**
 * The INSERT of one event with its parameters numbered from `$first`: recordAuthEvent's statement,
 * and a part of a statement that writes the event with what it records (a login's session, a
 * refresh's rotation: one round trip, sessions.repository.ts). With `onlyIf`, the name of a CTE of
 * that statement, the event is written only when that CTE has a row.
 */
export function authEventInsert(event: AuthEvent, first = 1, onlyIf?: string): { sql: string; params: unknown[] } {
  const $ = (i: number) => `$${first + i}`;
  const row = `${$(0)}, ${$(1)}, ${$(2)}, ${$(3)}, ${$(4)}, ${$(5)}, ${$(6)}, ${$(7)}::jsonb`;
  return {
    sql: `INSERT INTO auth_events (type, user_id, username, session_id, ip, user_agent, created_at, detail)
     ${onlyIf ? `SELECT ${row} FROM ${onlyIf}` : `VALUES (${row})`}`,
    params: [
      event.type,
      event.userId ?? null,
      event.username ?? null,
      event.sessionId ?? null,
      event.origin.ip,
      event.origin.userAgent,
      event.at,
      event.detail ? JSON.stringify(event.detail) : null,
    ],
  };
}

/** Returns the id of the new row. */
export async function recordAuthEvent(db: Queryable, event: AuthEvent): Promise<string> {
  const insert = authEventInsert(event);
  const { rows } = await db.query<{ id: string }>(`${insert.sql} RETURNING id::text AS id`, insert.params);
  return rows[0]!.id;
}

/** A bounded copy of the User-Agent header for sessions and audit rows. */
export function userAgentOf(header: string | string[] | undefined): string | null {
  const value = Array.isArray(header) ? header[0] : header;
  return value ? value.slice(0, 512) : null;
}
