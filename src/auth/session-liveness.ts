import type { Clock } from '../clock.js';
import type { Queryable } from '../db/database.js';

/** What one lookup found about a session: its user, and whether it may still be used. */
interface Checked {
  /** The session's user, or null when there is no such session (never was, or deleted with its user). */
  userId: number | null;
  alive: boolean;
  /** The injected clock's time when the lookup started (not when it ended: the earlier, the stricter). */
  checkedAt: number;
}

/**
 * Whether the session of an access token is alive: not revoked (logout, revoke-all, ending that
 * session, a password change or reset, a reused refresh token, a deactivation of the user or its
 * tenant all set `sessions.revoked_at`), not deleted, and its user active. One primary-key probe of
 * `sessions` joined to `users` by theirs. The user is checked as well as the revocation although a
 * deactivation revokes every session in the same transaction: it costs nothing in that statement and
 * does not depend on every writer remembering to revoke.
 */
export async function lookUpSession(db: Queryable, sessionId: string): Promise<{ userId: number | null; alive: boolean }> {
  const { rows } = await db.query<{ user_id: number; alive: boolean }>(
    `SELECT s.user_id, s.revoked_at IS NULL AND u.active AS alive FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = $1`,
    [sessionId],
  );
  const row = rows[0];
  return row ? { userId: row.user_id, alive: row.alive } : { userId: null, alive: false };
}

/**
 * ACCESS_TOKEN_REVOCATION=session: answers whether a token's session is alive, from a per-process
 * cache of at most `capacity` sessions, each looked up again once `periodMs` (by the injected clock)
 * has passed since its last lookup started. So a revocation counts within the period on every
 * process, and a process sends at most one query per session per period whatever its traffic.
 *
 * Single-flight: while a session is being looked up, further requests for it wait for that lookup
 * instead of sending their own (a burst on a cold or just-expired entry is one query, not one per
 * request). A failed lookup is not cached: its waiters get the error (503 while the database is
 * down, as any query), the next request tries again.
 *
 * Bounded: when full, the entry looked up longest ago leaves first (a Map keeps insertion order and
 * each lookup re-inserts its entry). Only sessions of validly signed tokens get here, so filling the
 * cache takes real logins; an evicted entry costs one more query, never a wrong answer.
 */
export class SessionLiveness {
  private readonly checked = new Map<string, Checked>();
  private readonly inFlight = new Map<string, Promise<Checked>>();

  constructor(
    private readonly db: Queryable,
    readonly clock: Clock,
    readonly periodMs: number,
    private readonly capacity = 10_000,
  ) {}

  /** Whether the session is alive and belongs to `userId` (a token pairing a session with another user's id is no token of ours). */
  async isAlive(sessionId: string, userId: number): Promise<boolean> {
    const now = this.clock.now().getTime();
    let entry = this.checked.get(sessionId);
    // A clock that went back (an adjusted clock, a test) does not extend an entry's life.
    if (!entry || now < entry.checkedAt || now - entry.checkedAt >= this.periodMs) entry = await this.lookUp(sessionId, now);
    return entry.alive && entry.userId === userId;
  }

  /** How many sessions are cached (for tests and, if ever wanted, a gauge). */
  get size(): number {
    return this.checked.size;
  }

  private lookUp(sessionId: string, now: number): Promise<Checked> {
    const pending = this.inFlight.get(sessionId);
    if (pending) return pending;
    const lookup = lookUpSession(this.db, sessionId)
      .then((found) => {
        const entry: Checked = { ...found, checkedAt: now };
        this.checked.delete(sessionId);
        if (this.checked.size >= this.capacity) this.checked.delete(this.checked.keys().next().value!);
        this.checked.set(sessionId, entry);
        return entry;
      })
      .finally(() => this.inFlight.delete(sessionId));
    this.inFlight.set(sessionId, lookup);
    return lookup;
  }
}
