import { Helper } from './ipc.js';
import { sleep } from './processes.js';

export interface ReceiverStats {
  count: number;
  unique: number;
  first: number | undefined;
  last: number | undefined;
  hangs: boolean;
}

export interface Arrived {
  perSecond: number;
  spanMs: number;
  first: number;
  last: number;
  unique: number;
  /** False when the wait budget ran out first. */
  complete: boolean;
}

/** The receivers helper process, seen from the harness. */
export class Receivers {
  private constructor(
    private readonly helper: Helper,
    readonly urls: string[],
  ) {}

  static async start(count: number, options: { hanging?: number[]; trackEntities?: boolean; answerAfterMs?: number } = {}): Promise<Receivers> {
    const helper = await Helper.start('receivers');
    const urls = await helper.request<string[]>('start', { count, ...options });
    return new Receivers(helper, urls);
  }

  stats(): Promise<ReceiverStats[]> {
    return this.helper.request('stats');
  }

  reset(): Promise<void> {
    return this.helper.request('reset');
  }

  arrivals(): Promise<Record<string, number>> {
    return this.helper.request('arrivals');
  }

  /**
   * Waits until the answering receivers got `expected` distinct messages. Past `budgetMs` it stops
   * waiting and reports what arrived so far (`complete: false`): a slow pipeline still gives a
   * figure. Without a budget, nothing new for `stallMs` means a broken pipeline, and fails.
   * The rate is taken between the first and the last arrival, which leaves out start-up.
   */
  async waitFor(expected: number, limits: { stallMs: number; budgetMs?: number }, isAlive: () => boolean = () => true): Promise<Arrived> {
    const started = Date.now();
    let seen = -1;
    let progressAt = started;
    for (;;) {
      const healthy = (await this.stats()).filter((stats) => !stats.hangs);
      const unique = healthy.reduce((sum, stats) => sum + stats.unique, 0);
      const overBudget = limits.budgetMs !== undefined && Date.now() - started > limits.budgetMs;
      if (unique >= expected || overBudget) {
        if (unique < 2) return { perSecond: 0, spanMs: Date.now() - started, first: Number.NaN, last: Number.NaN, unique, complete: false };
        const first = Math.min(...healthy.map((stats) => stats.first ?? Infinity));
        const last = Math.max(...healthy.map((stats) => stats.last ?? 0));
        const spanMs = Math.max(last - first, 1);
        return { perSecond: ((unique - 1) / spanMs) * 1000, spanMs, first, last, unique, complete: unique >= expected };
      }
      if (unique !== seen) {
        seen = unique;
        progressAt = Date.now();
      } else if (limits.budgetMs === undefined && Date.now() - progressAt > limits.stallMs) {
        throw new Error(`deliveries stalled at ${unique} of ${expected} for ${limits.stallMs / 1000} s`);
      }
      if (!isAlive()) throw new Error(`the service exited with ${unique} of ${expected} delivered`);
      await sleep(100);
    }
  }

  stop(): Promise<void> {
    return this.helper.stop();
  }
}
