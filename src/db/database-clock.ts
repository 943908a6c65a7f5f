import { ManualClock, systemClock, type Clock } from '../clock.js';

/**
 * Leases and due times are computed by the database's clock, so that workers on hosts whose clocks
 * disagree still agree on when a lease expires and when a retry is due. `dbNow(n)` is the SQL for
 * that time with the statement parameter `$n` as an offset in milliseconds: 0 in production, and the
 * distance to an injected test clock (ManualClock) in tests, so that moving the test clock moves
 * the database's idea of "now" too.
 * The time the statement started, not the transaction (now()): a statement that waited for a lock
 * would otherwise take for not yet due what became due while it waited. (A claim counts its first
 * statement's time in all three of its statements: delivery/queue/claim.ts.)
 */
export function dbNow(parameter: number): string {
  return `(statement_timestamp() + $${parameter}::double precision * interval '1 millisecond')`;
}

/**
 * A ManualClock's offset is fixed when it is made and moves only with advance(), so the database's
 * time in tests is its clock plus a constant: it runs on from the test clock's as real time passes and
 * never goes back. Measured again per call (clock.now() − Date.now()), it carried the varying gap
 * between the client's Date.now() and the database's time: a row written due "now" could be
 * a millisecond short of due at the next claim. Any other injected clock is measured per call.
 */
export function clockOffsetMs(clock: Clock): number {
  if (clock === systemClock) return 0;
  if (clock instanceof ManualClock) return clock.wallClockOffsetMs;
  return clock.now().getTime() - Date.now();
}
