import { spawn } from 'node:child_process';
import { chownSync, closeSync, existsSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ConfigError } from '../../config.js';
import { findEmbeddedBinaries, type EmbeddedBinaries } from './binaries.js';
import { clusterDir, ensureCluster, markAppRoleReady, postgresSystemUser, type Credentials, type EmbeddedLogger, type SystemUser } from './cluster.js';
import { ensurePrivateDirectory } from './permissions.js';
import { ensureAppRole } from './app-role.js';
import { giveClusterTo, reachableBinaries, serverDirectory } from './server-user-access.js';
import { freeLocalPort, isAlive, processCommandLine, sleep } from './processes.js';
import { claimOwnership, describeOwner, releaseOwnership, writeState, type OwnerState } from './state.js';

export interface StartOptions {
  /** The server died and could not be restarted. */
  onFatal?: (error: Error) => void;
  /**
   * A server for one test run, deleted afterwards: no fsync (nothing in it must survive a power
   * loss), which makes the suite's many CREATE DATABASE … TEMPLATE and commits cheap.
   */
  throwaway?: boolean;
}

/** How to reach an embedded server: a Unix socket directory (or 127.0.0.1) and a password. */
export interface EmbeddedConnection {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

/** Another live process owns the embedded server of this DATA_DIR. */
export class EmbeddedServerBusyError extends Error {
  constructor(
    readonly dataDir: string,
    readonly owner: OwnerState,
  ) {
    super(`The embedded PostgreSQL server in ${dataDir} is already run by ${describeOwner(owner)}. ` +
      'Stop it first, or run `plaza serve --role api` / `--role worker` to add processes that use it.');
  }
}

export const EMBEDDED_DATABASE = 'plaza';
const SOCKET_PORT = 5432;
// sun_path holds 108 bytes on Linux (104 on macOS); PostgreSQL appends "/.s.PGSQL.5432".
const MAX_SOCKET_DIR_LENGTH = 90;
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

export const connectionString = (c: EmbeddedConnection) =>
  c.host.startsWith('/')
    ? `postgresql://${c.user}:${encodeURIComponent(c.password)}@localhost:${c.port}/${c.database}?host=${encodeURIComponent(c.host)}`
    : `postgresql://${c.user}:${encodeURIComponent(c.password)}@${c.host}:${c.port}/${c.database}`;

export function refuseLegacyLayout(dataDir: string): void {
  if (existsSync(join(dataDir, 'pgdata'))) {
    throw new ConfigError(
      `${join(dataDir, 'pgdata')} is a database of the old embedded engine (PGlite), which this version no longer reads. ` +
        'Move it away or delete it (no released version stored data there), or point DATA_DIR to another directory.',
    );
  }
}

/**
 * The PostgreSQL server that Plaza runs itself in DATA_DIR/postgres (or in its relocation, see
 * serverDirectory in server-user-access.ts). `start` makes this process
 * its owner: it initialises the cluster on first start, adopts a postmaster that a killed owner
 * left running, restarts the server when it dies, and stops it (fast shutdown) in `stop`.
 */
export class EmbeddedServer {
  private postmasterPid = 0;
  private watchdog: NodeJS.Timeout | undefined;
  private stopping = false;
  private restarting = false;
  connection!: EmbeddedConnection;

  private constructor(
    readonly dataDir: string,
    /** Where the cluster, socket and log live: DATA_DIR, or see serverDirectory. */
    readonly serverDir: string,
    readonly binaries: EmbeddedBinaries,
    private readonly runAs: SystemUser | undefined,
    private readonly credentials: Credentials & { admin: Credentials },
    private readonly owner: OwnerState,
    private readonly logger: EmbeddedLogger,
    private readonly options: StartOptions,
  ) {}

  static async start(dataDirInput: string, logger: EmbeddedLogger, options: StartOptions = {}): Promise<EmbeddedServer> {
    const dataDir = resolve(dataDirInput);
    ensurePrivateDirectory(dataDir);
    refuseLegacyLayout(dataDir);
    const claim = claimOwnership(dataDir);
    if ('busy' in claim) throw new EmbeddedServerBusyError(dataDir, claim.busy);
    try {
      const installed = await findEmbeddedBinaries();
      const runAs = postgresSystemUser();
      // As root the server runs as `postgres`, which must reach its cluster and socket directory
      // (DATA_DIR, or a place of its own when DATA_DIR is out of its reach) and its binaries
      // (copied there when node_modules is below a folder it cannot enter).
      let serverDir = dataDir;
      if (runAs) {
        const place = serverDirectory(dataDir, runAs);
        serverDir = place.dir;
        if (serverDir === dataDir) {
          chownSync(dataDir, runAs.uid, runAs.gid);
          giveClusterTo(dataDir, runAs);
        } else logger.warn({ serverDir, blocked: place.blocked }, `the embedded PostgreSQL server lives in ${serverDir}: its user ${runAs.name} cannot enter a folder above DATA_DIR`);
      }
      const binaries = runAs ? reachableBinaries(installed, serverDir, runAs) : installed;
      const credentials = await ensureCluster(dataDir, binaries, runAs, logger, options.throwaway, serverDir);
      const server = new EmbeddedServer(dataDir, serverDir, binaries, runAs, credentials, claim.owner, logger, options);
      await server.run();
      return server;
    } catch (error) {
      releaseOwnership(dataDir);
      throw error;
    }
  }

  /** Adopts a running postmaster of this cluster or starts one, then watches it. */
  private async run(): Promise<void> {
    const orphan = this.runningPostmaster();
    if (orphan) {
      this.logger.warn({ postgresPid: orphan.pid }, 'adopting the embedded PostgreSQL server left running by a previous Plaza process');
      this.postmasterPid = orphan.pid;
      this.connection = this.connectionFor(orphan.socketDir || '127.0.0.1', orphan.port);
      await this.waitReady();
    } else {
      this.removeStaleLocks();
      const socketDir = process.platform !== 'win32' && this.serverDir.length <= MAX_SOCKET_DIR_LENGTH ? this.serverDir : '';
      // A restart after a crash keeps the port: the pool's connection string names it.
      const port = socketDir ? SOCKET_PORT : (this.connection?.port ?? (await freeLocalPort()));
      this.connection = this.connectionFor(socketDir || '127.0.0.1', port);
      this.spawnPostmaster(socketDir, port);
      await this.waitReady();
    }
    await this.ensureDatabase();
    writeState(this.dataDir, { ...this.owner, postmasterPid: this.postmasterPid, host: this.connection.host, port: this.connection.port });
    this.watchdog ??= setInterval(() => void this.checkAlive(), 500).unref();
  }

  private connectionFor(host: string, port: number): EmbeddedConnection {
    return { host, port, user: this.credentials.user, password: this.credentials.password, database: EMBEDDED_DATABASE };
  }

  /**
   * The cluster's superuser, for what the application's role may not do: the test runner creates
   * its databases with it. Plaza itself connects as `connection` (app-role.ts).
   */
  get adminConnection(): EmbeddedConnection {
    return { ...this.connection, user: this.credentials.admin.user, password: this.credentials.admin.password, database: 'postgres' };
  }

  /** The postmaster named in postmaster.pid, when it is alive and really serves this cluster. */
  private runningPostmaster(): { pid: number; port: number; socketDir: string } | undefined {
    const lines = readLines(join(clusterDir(this.serverDir), 'postmaster.pid'));
    const pid = Number(lines[0]);
    if (!pid || pid === process.pid || !isAlive(pid)) return undefined;
    // A reused pid (containers restart with the same pids) is some other program, not postgres -D <cluster>.
    if (!processCommandLine(pid).includes(clusterDir(this.serverDir))) return undefined;
    return { pid, port: Number(lines[3]), socketDir: lines[4] ?? '' };
  }

  /**
   * postmaster.pid and the socket lock of a server that is gone. PostgreSQL removes them itself
   * unless their pid now belongs to a live process (a container restart), which makes it refuse
   * to start: we already know no postmaster of ours is running, so they go.
   */
  private removeStaleLocks(): void {
    rmSync(join(clusterDir(this.serverDir), 'postmaster.pid'), { force: true });
    rmSync(join(this.serverDir, `.s.PGSQL.${SOCKET_PORT}.lock`), { force: true });
    rmSync(join(this.serverDir, `.s.PGSQL.${SOCKET_PORT}`), { force: true });
  }

  private spawnPostmaster(socketDir: string, port: number): void {
    // Its output goes to a file, not a pipe: the server outlives a killed Plaza and must not
    // block or die writing to a closed pipe. Detached: a Ctrl-C in the terminal reaches Plaza
    // only, which drains HTTP before it stops the server.
    const logPath = join(this.serverDir, 'postgres.log');
    const log = openSync(logPath, 'a', 0o600);
    try {
      const child = spawn(this.binaries.postgres, [
        '-D', clusterDir(this.serverDir),
        '-p', String(port),
        '-c', `listen_addresses=${socketDir ? '' : '127.0.0.1'}`,
        '-c', `unix_socket_directories=${socketDir}`,
        '-c', 'unix_socket_permissions=0700',
        // The defaults, stated: a committed event survives a power loss.
        ...(this.options.throwaway ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : ['-c', 'fsync=on', '-c', 'synchronous_commit=on']),
        '-c', 'log_checkpoints=off',
      ], { detached: true, stdio: ['ignore', log, log], env: { ...process.env, LC_MESSAGES: 'C' }, ...(this.runAs ? { uid: this.runAs.uid, gid: this.runAs.gid } : {}) });
      child.on('error', () => {});
      child.unref();
      this.postmasterPid = child.pid ?? 0;
    } finally {
      closeSync(log);
    }
    this.logOffset = statSync(logPath).size;
  }

  private logOffset = 0;

  /** Waits for postmaster.pid to say "ready"; fails with the server's own words when it exits. */
  private async waitReady(): Promise<void> {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    const pidFile = join(clusterDir(this.serverDir), 'postmaster.pid');
    for (;;) {
      const lines = readLines(pidFile);
      if (Number(lines[0]) === this.postmasterPid && lines[7]?.trim() === 'ready') return;
      if (!isAlive(this.postmasterPid)) throw new Error(`The embedded PostgreSQL server did not start:\n${this.recentLog()}`);
      if (Date.now() > deadline) throw new Error(`The embedded PostgreSQL server was not ready within ${READY_TIMEOUT_MS / 1000} s:\n${this.recentLog()}`);
      await sleep(20);
    }
  }

  private recentLog(): string {
    try {
      return readFileSync(join(this.serverDir, 'postgres.log'), 'utf8').slice(this.logOffset).slice(-3000);
    } catch {
      return '(no log)';
    }
  }

  private async ensureDatabase(): Promise<void> {
    if (this.credentials.appRoleReady) return;
    await ensureAppRole(this.adminConnection, this.credentials, EMBEDDED_DATABASE);
    markAppRoleReady(this.dataDir, this.credentials);
    this.credentials.appRoleReady = true;
  }

  /**
   * The server died under us (killed, out of memory). Requests answer 503 meanwhile; we restart
   * it, which replays the WAL (nothing committed is lost). If it cannot be restarted, the owner
   * is told to exit with the server's message.
   */
  private async checkAlive(): Promise<void> {
    if (this.stopping || this.restarting || isAlive(this.postmasterPid)) return;
    this.restarting = true;
    this.logger.error({ postgresPid: this.postmasterPid }, 'the embedded PostgreSQL server exited unexpectedly; restarting it');
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          // Backends of the killed postmaster exit on their own within moments; until then the
          // cluster is still in use and a new postmaster refuses to start.
          await sleep(500 * attempt);
          if (this.stopping) return;
          await this.run();
          this.logger.warn({ postgresPid: this.postmasterPid }, 'the embedded PostgreSQL server is running again');
          return;
        } catch (error) {
          if (attempt >= 5) {
            this.options.onFatal?.(new Error(`The embedded PostgreSQL server could not be restarted: ${(error as Error).message}`));
            return;
          }
        }
      }
    } finally {
      this.restarting = false;
    }
  }

  /** Fast shutdown: open transactions roll back, everything committed is on disk. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.watchdog);
    const pid = this.postmasterPid;
    if (isAlive(pid)) {
      process.kill(pid, 'SIGINT');
      const deadline = Date.now() + STOP_TIMEOUT_MS;
      while (isAlive(pid) && Date.now() < deadline) await sleep(20);
      if (isAlive(pid)) process.kill(pid, 'SIGQUIT');
    }
    releaseOwnership(this.dataDir);
  }
}

function readLines(path: string): string[] {
  try {
    return readFileSync(path, 'utf8').split('\n');
  } catch {
    return [];
  }
}
