import { retryTransientConflicts, type Database } from '../../db/database.js';
import type { Clock } from '../../clock.js';
import { completeAttempts, type AttemptRecord, type CompletionOptions, type CompletionResult } from '../queue/complete.js';
import { clockOffsetMs } from '../../db/database-clock.js';
import { activeTracer, inSpan } from '../../telemetry/tracing.js';

export interface Completed {
  /** False when the lease was lost meanwhile (another worker took over, or the webhook was deleted). */
  recorded: boolean;
  /** This batch disabled the delivery's webhook (410 Gone, or failing too long). */
  webhookDisabled: boolean;
}

interface Waiting {
  record: AttemptRecord;
  resolve: (result: Completed) => void;
  reject: (error: unknown) => void;
}

/**
 * Collects finished attempts and records them in batches: one flush at a time, each taking what
 * accumulated while the previous one ran (up to maxBatch). Under load this turns hundreds of
 * completions a second into a few statements; when idle a completion is written on the next tick.
 */
export class CompletionBatcher {
  private waiting: Waiting[] = [];
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly options: Omit<CompletionOptions, 'clockOffsetMs'>,
    private readonly maxBatch: number,
  ) {}

  complete(record: AttemptRecord): Promise<Completed> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ record, resolve, reject });
      if (!this.flushing) this.flushing = new Promise<void>((done) => setImmediate(done)).then(() => this.drain());
    });
  }

  /** Waits until everything handed in so far is written. */
  async idle(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private async drain(): Promise<void> {
    while (this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.maxBatch);
      try {
        const { recorded, disabledWebhooks } = await this.write(batch.map((entry) => entry.record));
        for (const entry of batch) {
          entry.resolve({ recorded: recorded.has(entry.record.deliveryId), webhookDisabled: disabledWebhooks.has(entry.record.webhookId) });
        }
      } catch (error) {
        for (const entry of batch) entry.reject(error);
      }
    }
    this.flushing = undefined;
  }

  /**
   * A batch that lost a deadlock or serialization race was rolled back whole: it runs again.
   * With traces exported, the batch is a span linked to the send of each attempt it records.
   */
  private async write(records: AttemptRecord[]): Promise<CompletionResult> {
    const run = () => retryTransientConflicts(() => completeAttempts(this.db, records, { ...this.options, clockOffsetMs: clockOffsetMs(this.clock) }));
    const tracer = activeTracer();
    if (!tracer.enabled) return run();
    const links = records.flatMap((record) => (record.traceparent ? [record.traceparent] : []));
    const span = tracer.startSpan('plaza.complete', { links, attributes: { 'plaza.worker.id': this.options.workerId, 'plaza.completion.batch_size': records.length } });
    return inSpan(span, run, (result) => ({ 'plaza.completion.recorded': result.recorded.size, 'plaza.completion.disabled_webhooks': result.disabledWebhooks.size }));
  }
}
