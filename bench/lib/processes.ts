import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

/**
 * Every process the harness starts, so that an interrupted run (Ctrl-C, a crash) stops them all
 * instead of leaving servers holding ports and databases.
 */
const running = new Set<ChildProcess>();

export function track(child: ChildProcess): void {
  running.add(child);
}

export function untrack(child: ChildProcess): void {
  running.delete(child);
}

export function killAll(): void {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
}

process.once('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAll();
    process.exit(130);
  });
}

/** A TCP port free right now on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Wall-clock milliseconds with sub-millisecond resolution, comparable between processes. */
export function wallNow(): number {
  return performance.timeOrigin + performance.now();
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Peak resident memory of a process in MiB (VmHWM), or undefined once it is gone. */
export async function peakRssMiB(pid: number): Promise<number | undefined> {
  const { readFile } = await import('node:fs/promises');
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const match = /^VmHWM:\s+(\d+) kB/m.exec(status);
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}
