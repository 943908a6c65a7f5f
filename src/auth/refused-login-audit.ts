import type { Clock } from '../clock.js';
import type { Queryable } from '../db/database.js';
import { recordAuthEvent, type RequestOrigin } from './auth-events.repository.js';
import { ipKeyOf } from './login-limit-keys.js';

export interface RefusedLogin {
  at: Date;
  origin: RequestOrigin;
  userId: number | null;
  username: string | null;
  retryAfterSeconds: number;
}

interface OpenWindow {
  /** The id of the window's audit row, once written. */
  row: Promise<string | undefined>;
  count: number;
  written: number;
  endsAt: number;
}

// More distinct (account, address) windows than this open at once: all are closed early (counts
// written) rather than letting an attacker who rotates addresses grow this map without bound.
const MAX_OPEN_WINDOWS = 10_000;

/**
 * Refused (429) logins are counted, not written one by one: a client hammering a cooled-down
 * login would otherwise write an audit row per request (hundreds per second). Per account (or all
 * unknown names) and client address, the first refusal of a window writes one `login_limited` row
 * at once, so the flood is on record even if the process dies; later refusals in that window only
 * count in memory, and when the window ends (the next refusal after it, the periodic sweep, or
 * shutdown) the row's `detail.refused` becomes the window's count. Each API process keeps its own
 * windows, so N processes write at most N rows per key and window.
 */
export class RefusedLoginAudit {
  private readonly open = new Map<string, OpenWindow>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly db: Queryable,
    private readonly clock: Clock,
    private readonly windowMs: number,
  ) {
    this.sweeper = setInterval(() => void this.closeWindows(false).catch(() => {}), windowMs);
    this.sweeper.unref();
  }

  async record(refusal: RefusedLogin): Promise<void> {
    const key = `${refusal.userId ?? '-'}|${ipKeyOf(refusal.origin.ip)}`;
    const now = refusal.at.getTime();
    const current = this.open.get(key);
    if (current && now < current.endsAt) {
      current.count++;
      return;
    }
    if (current) await this.closeWindow(key, current);
    if (this.open.size >= MAX_OPEN_WINDOWS) await this.closeWindows(true);
    const window: OpenWindow = { row: Promise.resolve(undefined), count: 1, written: 1, endsAt: now + this.windowMs };
    window.row = recordAuthEvent(this.db, {
      type: 'login_limited',
      at: refusal.at,
      origin: refusal.origin,
      userId: refusal.userId,
      username: refusal.username,
      detail: { retry_after: refusal.retryAfterSeconds, refused: 1, window_seconds: this.windowMs / 1000 },
    });
    this.open.set(key, window);
    try {
      await window.row;
    } catch (error) {
      // Not on record: the next refusal starts the window again rather than counting into nothing.
      if (this.open.get(key) === window) this.open.delete(key);
      throw error;
    }
  }

  /** Writes the counts of ended windows (all windows with `all`), e.g. at shutdown. */
  async closeWindows(all: boolean): Promise<void> {
    const now = this.clock.now().getTime();
    const ended = [...this.open].filter(([, window]) => all || now >= window.endsAt);
    await Promise.all(ended.map(([key, window]) => this.closeWindow(key, window)));
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await this.closeWindows(true);
  }

  private async closeWindow(key: string, window: OpenWindow): Promise<void> {
    if (this.open.get(key) === window) this.open.delete(key);
    const id = await window.row.catch(() => undefined);
    if (id === undefined || window.count === window.written) return;
    window.written = window.count;
    await this.db.query(`UPDATE auth_events SET detail = jsonb_set(detail, '{refused}', to_jsonb($2::integer)) WHERE id = $1`, [id, window.count]);
  }
}
