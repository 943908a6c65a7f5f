import { linkSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { processStartTime } from './processes.js';

/**
 * DATA_DIR/postgres.state.json: which process owns the embedded server and where the server
 * listens. The owner writes it; the CLI and `plaza serve --role api|worker` read it to connect to
 * the running server instead of starting a second one. The owner is (pid, start time), never the
 * pid alone: in a container PID 1 repeats across restarts, and a pid in a stale file may now be
 * any other process.
 */
export interface OwnerState {
  pid: number;
  startTime: string;
  hostname: string;
  command: string;
  startedAt: string;
  /** Set once the server accepts connections. */
  postmasterPid?: number;
  host?: string;
  port?: number;
}

const STATE_FILE = 'postgres.state.json';

export function readState(dataDir: string): OwnerState | undefined {
  try {
    return JSON.parse(readFileSync(join(dataDir, STATE_FILE), 'utf8')) as OwnerState;
  } catch {
    return undefined;
  }
}

export function ownerIsAlive(state: OwnerState): boolean {
  return processStartTime(state.pid) === state.startTime;
}

/**
 * Becomes the owner of the embedded server in dataDir, or returns the live owner that already is.
 * link() fails when the file exists, so of two processes starting at once exactly one wins.
 */
export function claimOwnership(dataDir: string): { owner: OwnerState } | { busy: OwnerState } {
  const me: OwnerState = {
    pid: process.pid,
    startTime: processStartTime(process.pid) ?? 'unknown',
    hostname: hostname(),
    command: `plaza ${process.argv.slice(2).join(' ')}`.trim(),
    startedAt: new Date().toISOString(),
  };
  const path = join(dataDir, STATE_FILE);
  for (let attempt = 0; attempt < 5; attempt++) {
    const draft = `${path}.${process.pid}.tmp`;
    writeFileSync(draft, JSON.stringify(me), { mode: 0o600 });
    try {
      linkSync(draft, path);
      return { owner: me };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      rmSync(draft, { force: true });
    }
    const current = readState(dataDir);
    if (current && current.pid !== process.pid && ownerIsAlive(current)) return { busy: current };
    // Left by an owner that died (kill -9, power loss, container restart): take it over, unless
    // another starter replaced it in the meantime.
    if (JSON.stringify(readState(dataDir)) === JSON.stringify(current)) rmSync(path, { force: true });
  }
  throw new Error(`Could not take ${path}: other processes keep replacing it.`);
}

/** Replaces the state atomically (rename), so that a reader never sees half a file. */
export function writeState(dataDir: string, state: OwnerState): void {
  const path = join(dataDir, STATE_FILE);
  const draft = `${path}.${process.pid}.tmp`;
  writeFileSync(draft, JSON.stringify(state), { mode: 0o600 });
  renameSync(draft, path);
}

export function releaseOwnership(dataDir: string): void {
  const current = readState(dataDir);
  if (current?.pid === process.pid) rmSync(join(dataDir, STATE_FILE), { force: true });
}

export function describeOwner(state: OwnerState): string {
  return `process ${state.pid} on ${state.hostname} ("${state.command}", since ${state.startedAt})`;
}
