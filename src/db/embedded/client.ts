import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Credentials } from './cluster.js';
import { sleep } from './processes.js';
import { EMBEDDED_DATABASE, type EmbeddedConnection } from './server.js';
import { ownerIsAlive, readState, type OwnerState } from './state.js';

export type RunningServer = { owner: OwnerState; connection: EmbeddedConnection };

/**
 * The embedded server of dataDir when a live Plaza process runs it (read from its state file),
 * waiting while that owner is still starting it. Undefined when no live process owns it.
 * Other tools (backup, restore) connect with this too.
 */
export async function findRunningEmbeddedServer(dataDirInput: string, waitMs = 60_000): Promise<RunningServer | undefined> {
  const dataDir = resolve(dataDirInput);
  const deadline = Date.now() + waitMs;
  for (;;) {
    const state = readState(dataDir);
    if (!state || state.pid === process.pid || !ownerIsAlive(state)) return undefined;
    if (state.postmasterPid && state.host && state.port) {
      const credentials = JSON.parse(readFileSync(join(dataDir, 'postgres.json'), 'utf8')) as Credentials;
      return { owner: state, connection: { host: state.host, port: state.port, user: credentials.user, password: credentials.password, database: EMBEDDED_DATABASE } };
    }
    if (Date.now() > deadline) throw new Error(`The embedded PostgreSQL server in ${dataDir} is being started by process ${state.pid} and was not ready within ${waitMs / 1000} s.`);
    await sleep(100);
  }
}
