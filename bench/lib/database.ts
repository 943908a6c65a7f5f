import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findRunningEmbeddedServer } from '../../src/db/embedded/client.js';
import { connectionString } from '../../src/db/embedded/server.js';
import { withAdminClient } from '../../src/testing/test-database.js';
import { runHelper } from './ipc.js';

export type Engine = 'embedded' | 'postgres';

/**
 * A fresh database for one scenario: a new DATA_DIR whose embedded PostgreSQL server is
 * initialised and migrated here (about a second), or a new database on the PostgreSQL server of
 * DATABASE_URL (dropped afterwards). Either way the service also gets its own DATA_DIR (for its
 * generated keys).
 */
export interface BenchDatabase {
  readonly engine: Engine;
  readonly dataDir: string;
  readonly databaseUrl?: string;
  /** The environment variables that point the service and the helpers at this database. */
  readonly env: Record<string, string>;
  dispose(): Promise<void>;
}

let counter = 0;

// Data directories still on disk: an interrupted run removes them on its way out.
const liveDirs = new Set<string>();
process.once('exit', () => {
  for (const dir of liveDirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  liveDirs.add(dir);
  return dir;
}

function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  liveDirs.delete(dir);
}

export async function createBenchDatabase(engine: Engine): Promise<BenchDatabase> {
  const dataDir = tempDir(`plaza-bench-${engine}-`);
  if (engine === 'embedded') {
    await runHelper('db-tasks', 'prepare', { env: { DATA_DIR: dataDir } });
    return {
      engine,
      dataDir,
      env: { DATA_DIR: dataDir },
      async dispose() {
        removeDir(dataDir);
      },
    };
  }
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) throw new Error('DATABASE_URL is not set');
  const name = `plaza_bench_${process.pid}_${++counter}`;
  await withAdminClient(serverUrl, (client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  await runHelper('db-tasks', 'prepare', { env: { DATA_DIR: dataDir, DATABASE_URL: databaseUrl } });
  return {
    engine,
    dataDir,
    databaseUrl,
    env: { DATA_DIR: dataDir, DATABASE_URL: databaseUrl },
    async dispose() {
      await withAdminClient(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      removeDir(dataDir);
    },
  };
}

/**
 * Drops the databases of earlier runs that were interrupted (their harness process is gone):
 * they are named plaza_bench_<pid>_<n>.
 */
export async function dropAbandonedDatabases(serverUrl: string): Promise<void> {
  await withAdminClient(serverUrl, async (client) => {
    const { rows } = await client.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE 'plaza\\_bench\\_%'`);
    for (const { datname } of rows) {
      const pid = Number(/^plaza_bench_(\d+)_\d+$/.exec(datname)?.[1]);
      if (!pid || pid === process.pid || isAlive(pid)) continue;
      await client.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    }
  });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A connection string to this database for a client of the harness's own (a meter, a peer): on the
 * embedded way, the server of DATA_DIR that a running Plaza process owns (none is started here).
 */
export async function runningDatabaseUrl(db: BenchDatabase): Promise<string> {
  if (db.databaseUrl) return db.databaseUrl;
  const running = await findRunningEmbeddedServer(db.dataDir);
  if (!running) throw new Error(`no process runs the embedded server of ${db.dataDir}`);
  return connectionString(running.connection);
}

/** Runs a db-tasks job (seeding, SQL ceilings) in a helper process against this database. */
export function dbTask<T>(db: BenchDatabase, type: string, payload: Record<string, unknown> = {}): Promise<T> {
  return runHelper<T>('db-tasks', type, { ...payload, env: db.env });
}
