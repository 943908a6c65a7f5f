import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Database } from '../db/database.js';
import { openPostgres } from '../db/postgres.js';
import { withAdminClient, withDatabase } from './test-database.js';
import { freePort } from './plaza-process.js';

/** The machine's PostgreSQL, shared with everyone: only fresh databases are created on it, never restarted. */
export const SHARED_POSTGRES_URL = process.env.PLAZA_RELIABILITY_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface FreshDatabase {
  readonly url: string;
  /** A small pool for the test's own checks and seeding. */
  readonly db: Database;
  drop(): Promise<void>;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** An empty database (the service migrates it at start) on a PostgreSQL server. */
export async function createFreshDatabase(serverUrl = SHARED_POSTGRES_URL): Promise<FreshDatabase> {
  const name = `plaza_rel_${process.pid}_${randomBytes(4).toString('hex')}`;
  await withAdminClient(serverUrl, async (admin) => {
    // Databases of earlier runs that were killed before their cleanup (their process is gone).
    const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE 'plaza\\_rel\\_%'`);
    for (const { datname } of rows) {
      const pid = Number(datname.split('_')[2]);
      if (Number.isSafeInteger(pid) && !alive(pid)) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`).catch(() => {});
    }
    await admin.query(`CREATE DATABASE ${name}`);
  });
  const url = withDatabase(serverUrl, name);
  const db = openPostgres({ connectionString: url, poolSize: 4, connectTimeoutMs: 3000, statementTimeoutMs: 30_000 });
  let dropped = false;
  return {
    url,
    db,
    async drop() {
      if (dropped) return;
      dropped = true;
      await db.close().catch(() => {});
      await withAdminClient(serverUrl, (admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).catch(() => {});
    },
  };
}

function pgBin(): string {
  const root = '/usr/lib/postgresql';
  const version = process.env.PLAZA_PG_VERSION ?? readdirSync(root).sort((a, b) => Number(b) - Number(a))[0];
  const bin = join(root, String(version), 'bin');
  if (!existsSync(join(bin, 'pg_ctl'))) throw new Error(`No PostgreSQL binaries in ${bin}`);
  return bin;
}

/**
 * A private PostgreSQL cluster in a temporary directory, on its own port, that a test may stop and
 * restart freely: the machine's server is never touched. We run as root, so the cluster runs as postgres.
 */
export class PrivateCluster {
  readonly port: number;
  readonly dir: string;
  private readonly bin = pgBin();

  private constructor(dir: string, port: number) {
    this.dir = dir;
    this.port = port;
  }

  static async create(): Promise<PrivateCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'plaza-rel-pg-'));
    chmodSync(dir, 0o700);
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
    const cluster = new PrivateCluster(dir, await freePort());
    cluster.asPostgres('initdb', ['-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync']);
    cluster.start();
    return cluster;
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  private asPostgres(tool: string, args: string[]): void {
    execFileSync('runuser', ['-u', 'postgres', '--', join(this.bin, tool), ...args], { stdio: 'pipe', timeout: 60_000 });
  }

  private ctl(action: string, extra: string[] = []): void {
    this.asPostgres('pg_ctl', [
      '-D', join(this.dir, 'data'),
      '-o', `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`,
      '-l', join(this.dir, 'log'),
      '-w', '-t', '60',
      ...extra,
      action,
    ]);
  }

  start(): void {
    this.ctl('start');
  }

  /** Fast shutdown: connections are cut, as in a failover or an operator's restart. */
  stop(): void {
    this.ctl('stop', ['-m', 'fast']);
  }

  destroy(): void {
    try {
      this.stop();
    } catch {
      // already stopped
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
