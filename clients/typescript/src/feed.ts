import type { FeedItem, FeedPage } from './types.js';

export interface FeedOptions {
  /** Where to start: a next_cursor persisted earlier. Absent: the feed's beginning. */
  after?: string;
  /** Items per page (the server's default when absent). */
  limit?: number;
  /**
   * Keep polling once the feed is drained (wait pollIntervalMs, ask again from the last cursor)
   * until the signal aborts. Default false: the iteration ends at the first empty page.
   */
  follow?: boolean;
  pollIntervalMs?: number;
  signal?: AbortSignal;
}

/**
 * The notification feed as an async iterator of items, `GET /v1/{marketplace_code}/webhooks/{code}/
 * notifications?after=&limit=` answering `{items, next_cursor}`. `cursor` is where to resume: it
 * moves to a page's next_cursor once the loop has taken that page's last item, so persisting it
 * after each item gives at-least-once processing (a restart repeats at most the rest of one page;
 * make the handling idempotent, e.g. by the notification's id). `pages()` gives whole pages instead.
 */
export class NotificationFeed<Item = FeedItem> implements AsyncIterable<Item> {
  private position: string | undefined;

  constructor(
    private readonly fetchPage: (after: string | undefined, limit: number | undefined) => Promise<FeedPage<Item>>,
    private readonly options: FeedOptions = {},
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  ) {
    this.position = options.after;
  }

  /** The cursor to persist: pass it as `after` to resume. Undefined before the first page. */
  get cursor(): string | undefined {
    return this.position;
  }

  async *pages(): AsyncGenerator<FeedPage<Item>> {
    for (;;) {
      if (this.options.signal?.aborted) return;
      const page = await this.fetchPage(this.position, this.options.limit);
      if (page.items.length > 0) yield page;
      // Taken once the consumer asked for more: the page is processed by then.
      if (page.next_cursor) this.position = page.next_cursor;
      // Items without a next_cursor: the last page, with no position after it to follow from.
      if (!page.next_cursor && page.items.length > 0) return;
      if (page.items.length === 0) {
        if (!this.options.follow) return;
        await this.sleep(this.options.pollIntervalMs ?? 5000);
      }
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Item> {
    for await (const page of this.pages()) yield* page.items;
  }
}
