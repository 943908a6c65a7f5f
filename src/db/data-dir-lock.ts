import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

/**
 * PGlite takes no lock on its data directory, and two processes opening it lose committed rows
 * (measured). Plaza therefore holds its own lock file and refuses a second opener by name.
 */
export class DataDirLockedError extends Error {}

export interface DataDirLock {
  release(): void;
}

interface Holder {
  pid: number;
  hostname: string;
  command: string;
  startedAt: string;
}

export function lockDataDir(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const lockPath = join(dataDir, 'plaza.lock');
  const me: Holder = { pid: process.pid, hostname: hostname(), command: process.argv.slice(2).join(' ') || 'node', startedAt: new Date().toISOString() };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockPath, 'wx', 0o600);
      writeSync(fd, JSON.stringify(me));
      closeSync(fd);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        rmSync(lockPath, { force: true });
      };
      process.once('exit', release);
      return { release };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = readHolder(lockPath);
      if (holder && holderIsAlive(holder)) {
        throw new DataDirLockedError(
          `The embedded database in ${dataDir} is in use by process ${holder.pid} on ${holder.hostname} ` +
            `("plaza ${holder.command}", since ${holder.startedAt}). Stop it first, or set DATABASE_URL to share a PostgreSQL database.`,
        );
      }
      // The holder died without releasing (SIGKILL, power loss): the lock is stale.
      rmSync(lockPath, { force: true });
    }
  }
  throw new DataDirLockedError(`Could not lock ${lockPath}: another process keeps taking it.`);
}

function readHolder(lockPath: string): Holder | undefined {
  try {
    return JSON.parse(readFileSync(lockPath, 'utf8')) as Holder;
  } catch {
    return undefined;
  }
}

function holderIsAlive(holder: Holder): boolean {
  // Another host's process cannot be checked from here: assume it is alive.
  if (holder.hostname !== hostname()) return true;
  if (holder.pid === process.pid) return true;
  try {
    process.kill(holder.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
