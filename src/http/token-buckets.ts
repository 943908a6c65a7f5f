/**
 * Token buckets in this process's memory: `capacity` tokens, refilled at `perSecond`. One small
 * structure for the tenant limits (tenant-rate-limit.ts) and the worker's per-host send budget.
 * Keys are bounded by what callers use (tenants, callback hosts); full buckets are forgotten when
 * the map grows, since a full bucket is the same as no bucket.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly capacity: number,
    private readonly perSecond: number,
    private readonly maxKeys = 10_000,
  ) {}

  /**
   * Takes `cost` tokens for `key` at time `nowMs`. Returns 0 when taken, or the seconds to wait
   * until they would be there (nothing is taken then). A cost above the capacity is allowed from a
   * full bucket (the bucket goes negative), so that one large item is never refused forever.
   */
  take(key: string, cost: number, nowMs: number): number {
    const bucket = this.refill(key, nowMs);
    const needed = Math.min(cost, this.capacity);
    if (bucket.tokens < needed) return Math.max(1, Math.ceil((needed - bucket.tokens) / this.perSecond));
    bucket.tokens -= cost;
    return 0;
  }

  /** Gives back `cost` tokens taken for something that did not happen after all (never past the capacity). */
  giveBack(key: string, cost: number, nowMs: number): void {
    const bucket = this.refill(key, nowMs);
    bucket.tokens = Math.min(this.capacity, bucket.tokens + cost);
  }

  private refill(key: string, nowMs: number): { tokens: number; at: number } {
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= this.maxKeys) this.forgetFull(nowMs);
      bucket = { tokens: this.capacity, at: nowMs };
      this.buckets.set(key, bucket);
      return bucket;
    }
    bucket.tokens = Math.min(this.capacity, bucket.tokens + (Math.max(0, nowMs - bucket.at) / 1000) * this.perSecond);
    bucket.at = nowMs;
    return bucket;
  }

  private forgetFull(nowMs: number): void {
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + ((nowMs - bucket.at) / 1000) * this.perSecond >= this.capacity) this.buckets.delete(key);
    }
  }
}
