import type { ChildProcess } from 'node:child_process';

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
export { freeLocalPort as freePort } from '../../src/db/embedded/processes.js';

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

/**
 * Memory of the embedded PostgreSQL server of a DATA_DIR (postmaster and every child process),
 * summed over its processes: RSS as asked, and PSS, which splits the shared buffers between the
 * processes that map them instead of counting them once per process. Undefined when none runs.
 */
export async function embeddedServerMemory(dataDir: string): Promise<{ rssMiB: number; pssMiB: number; processes: number } | undefined> {
  const { readFile, readdir } = await import('node:fs/promises');
  let postmaster: number;
  try {
    postmaster = (JSON.parse(await readFile(`${dataDir}/postgres.state.json`, 'utf8')) as { postmasterPid: number }).postmasterPid;
  } catch {
    return undefined;
  }
  const pids = [postmaster];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster) pids.push(Number(name));
  }
  let rss = 0;
  let pss = 0;
  for (const pid of pids) {
    const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
    rss += Number(/^Rss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0);
    pss += Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0);
  }
  return rss ? { rssMiB: rss / 1024, pssMiB: pss / 1024, processes: pids.length } : undefined;
}
