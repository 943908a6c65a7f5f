import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { Readable } from 'node:stream';

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const hasExited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;
const status = (child: ChildProcess): ExitStatus => ({ code: child.exitCode, signal: child.signalCode });

/**
 * Resolves when the child has exited, at once when it already has. `once(child, 'exit')` waits for
 * an event that, if it fired before the call, never comes again: a test that awaited it after the
 * child had exited (killed, crashed, or just quick) hung until the runner's timeout.
 */
export function exited(child: ChildProcess): Promise<ExitStatus> {
  if (hasExited(child)) return Promise.resolve(status(child));
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/**
 * Like `exited`, and the child's output streams are closed too, so that everything it wrote has
 * been read ('exit' can come before the last chunk of stdout). At once when that is already so.
 */
export function closed(child: ChildProcess): Promise<ExitStatus> {
  const streamsClosed = child.stdio.every((stream) => !stream || stream.closed || stream.destroyed);
  if (hasExited(child) && streamsClosed) return Promise.resolve(status(child));
  return new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
}

/**
 * Waits until `done()` holds, checking again after each chunk the child writes to `stream`. Returns
 * `done()` as it stands once the child has exited and its output is read: more output from an exited
 * child never comes, so waiting for it never ends.
 */
export async function untilOutput(child: ChildProcess, stream: Readable, done: () => boolean): Promise<boolean> {
  const end = closed(child);
  let over = false;
  void end.then(() => (over = true));
  while (!done() && !over) {
    const ac = new AbortController();
    // The losing wait is cancelled; its rejection is expected.
    const chunk = once(stream, 'data', { signal: ac.signal }).catch(() => undefined);
    await Promise.race([chunk, end]);
    ac.abort();
  }
  return done();
}
