import { systemClock, type Clock } from '../clock.js';

/**
 * Leases and due times are computed by the database's clock, so that workers on hosts whose clocks
 * disagree still agree on when a lease expires and when a retry is due. `dbNow(n)` is the SQL for
 * that time with the statement parameter `$n` as an offset in milliseconds: 0 in production, and the
 * distance to an injected test clock (ManualClock) in tests, so that moving the test clock moves
 * the database's idea of "now" too.
 */
export function dbNow(parameter: number): string {
  return `(now() + $${parameter}::double precision * interval '1 millisecond')`;
}

export function clockOffsetMs(clock: Clock): number {
  return clock === systemClock ? 0 : clock.now().getTime() - Date.now();
}
