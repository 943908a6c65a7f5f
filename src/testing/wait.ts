import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitOptions {
  /** How long to keep asking (real time): the wait's bound, whatever the machine's speed. */
  timeoutMs: number;
  /** What the failure says; a function is asked only then, so it can show the state at the end. */
  message?: string | (() => string | Promise<string>);
  /** The longest pause between two asks (default 100 ms): shorter for a check that also samples. */
  maxPauseMs?: number;
}

/**
 * Asks `check` until it holds or `timeoutMs` has passed, and says which: true, or false once the
 * time is up (after one last ask). The pauses between asks grow from 5 ms to `maxPauseMs`, so a
 * quick condition is seen quickly and a long wait does not load the database with queries. Bounded
 * by time, not by a count of asks: a count of asks is a bound that varies with the machine.
 */
export async function eventually(check: () => boolean | Promise<boolean>, { timeoutMs, maxPauseMs = 100 }: Omit<WaitOptions, 'message'>): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (let pause = Math.min(5, maxPauseMs); Date.now() < deadline; pause = Math.min(pause * 2, maxPauseMs)) {
    if (await check()) return true;
    await sleep(Math.max(0, Math.min(pause, deadline - Date.now())));
  }
  return check();
}

/** Like `eventually`, and fails (an Error with `message`) when the time is up. */
export async function waitFor(check: () => boolean | Promise<boolean>, options: WaitOptions): Promise<void> {
  if (await eventually(check, options)) return;
  const message = typeof options.message === 'function' ? await options.message() : options.message;
  throw new Error(`${message ?? 'the condition did not hold'} (waited ${options.timeoutMs} ms)`);
}
