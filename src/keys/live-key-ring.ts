import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { readKeyView, type KeyView } from './jwt-key-ring.js';
import { MAX_VIEW_AGE_SECONDS, signingKeyAt, type TimelineKey } from './jwt-key-timeline.js';

/**
 * A process's view of the JWT keys, kept current: its timer reloads it every
 * JWT_KEYS_RELOAD_SECONDS, and a signature or a JWKS answer that finds it older than that reloads
 * it first (one read for all callers). So no process signs or publishes from a view older than
 * MAX_VIEW_AGE_SECONDS, which is what lets the timeline hold for every process (jwt-key-timeline.ts).
 */
export class LiveKeyRing {
  private loading: Promise<KeyView> | undefined;
  private readonly listeners: ((view: KeyView) => void)[] = [];

  private constructor(
    private readonly db: Database,
    private readonly master: Buffer,
    private readonly config: Config,
    private readonly clock: Clock,
    private view: KeyView,
  ) {}

  static async open(db: Database, master: Buffer, config: Config, clock: Clock): Promise<LiveKeyRing> {
    return new LiveKeyRing(db, master, config, clock, await readKeyView(db, master, config, clock));
  }

  get current(): KeyView {
    return this.view;
  }

  /** Called with every view read, the first one excepted. */
  onLoad(listener: (view: KeyView) => void): void {
    this.listeners.push(listener);
  }

  /** Reads the key table again; callers at the same time share one read. */
  reload(): Promise<KeyView> {
    this.loading ??= readKeyView(this.db, this.master, this.config, this.clock)
      .then((view) => {
        this.view = view;
        for (const listener of this.listeners) listener(view);
        return view;
      })
      .finally(() => {
        this.loading = undefined;
      });
    return this.loading;
  }

  private async fresh(now: Date): Promise<KeyView> {
    const maxAgeMs = Math.min(this.config.JWT_KEYS_RELOAD_SECONDS, MAX_VIEW_AGE_SECONDS) * 1000;
    return now.getTime() - this.view.readAt > maxAgeMs ? this.reload() : this.view;
  }

  /**
   * The key that signs at `now`, by the timeline on the database's clock. When the view is too
   * old and cannot be read again, nothing is signed (the error propagates): a key retired
   * meanwhile must not sign.
   */
  async signingKey(now: Date): Promise<TimelineKey> {
    const view = await this.fresh(now);
    return signingKeyAt(view.keys, now.getTime() + view.skewMs);
  }

  /**
   * Makes the view current enough to publish at `now`; false when it is too old and could not be
   * read again (the caller answers without letting it be cached).
   */
  async freshForPublishing(now: Date): Promise<boolean> {
    try {
      await this.fresh(now);
      return true;
    } catch {
      return false;
    }
  }
}
