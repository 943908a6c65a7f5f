import { chownSync, chmodSync, existsSync, lchownSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, symlinkSync, copyFileSync, type Stats } from 'node:fs';
import { createHash } from 'node:crypto';
import { dirname, join, resolve, sep } from 'node:path';
import { ConfigError } from '../../config.js';
import type { EmbeddedBinaries } from './binaries.js';
import { shellQuote } from './permissions.js';
import { clusterDir, type SystemUser } from './cluster.js';

/*
 * As root, the embedded server runs as the `postgres` user (cluster.ts), which needs search (x)
 * permission on every directory above its binaries and above DATA_DIR. A clone below a 0700
 * folder (`mktemp -d`, /root) has neither: initdb then failed with a bare `spawn … EACCES`.
 */

/** The first directory on the way to `path` (from /) that `user` may not enter, if any. */
export function firstBlockedDirectory(path: string, user: SystemUser): string | undefined {
  const groups = groupsOf(user);
  const parts = resolve(path).split(sep).filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    const dir = sep + parts.slice(0, i).join(sep);
    let stats: Stats;
    try {
      stats = statSync(dir);
    } catch {
      return undefined; // Not there yet (DATA_DIR is created later): nothing below it to block.
    }
    if (!mayEnter(stats, user.uid, groups)) return dir;
  }
  return undefined;
}

/**
 * The kernel's order: the owner's bits when the user owns it, else the group's when it is one of
 * the user's groups, else the others'. ACLs are not read; a directory opened by an ACL alone is
 * reported as blocked, and the message's `chmod o+x` is a fix that works there too.
 */
function mayEnter(stats: Stats, uid: number, groups: Set<number>): boolean {
  if (stats.uid === uid) return (stats.mode & 0o100) !== 0;
  if (groups.has(stats.gid)) return (stats.mode & 0o010) !== 0;
  return (stats.mode & 0o001) !== 0;
}

/** Primary group and the groups of /etc/group that list the user. */
function groupsOf(user: SystemUser): Set<number> {
  const groups = new Set([user.gid]);
  try {
    for (const line of readFileSync('/etc/group', 'utf8').split('\n')) {
      const [, , gid, members] = line.split(':');
      if (members?.split(',').includes(user.name)) groups.add(Number(gid));
    }
  } catch {
    // No /etc/group: the primary group only.
  }
  return groups;
}

/** Where the server's directories go when DATA_DIR is out of the server user's reach. */
export const RELOCATED_ROOT = '/var/lib/plaza';

/** The server directory used for DATA_DIR when it is relocated: named after DATA_DIR's absolute path. */
export function relocatedServerDir(dataDir: string): string {
  return join(RELOCATED_ROOT, `embedded-${createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 16)}`);
}

/** Whether `dir` holds an initialised cluster (initdb writes PG_VERSION). */
export const holdsCluster = (dir: string) => existsSync(join(clusterDir(dir), 'PG_VERSION'));

/**
 * Where the server keeps its cluster, socket and log: DATA_DIR, or, when the server
 * user cannot enter a folder above DATA_DIR (a clone in /root or in a `mktemp -d` folder, run as
 * root), a directory of its own in /var/lib/plaza named after DATA_DIR's path, owned by that user,
 * 0700. Plaza does not open the user's folders to others itself: `chmod o+x` would be a silent
 * security change. Once a cluster lives there, later starts keep using it, also after such a
 * chmod, so that a database never seems to vanish. Keys, credentials and the owner's state stay
 * in DATA_DIR.
 *
 * One DATA_DIR, one cluster: a cluster already in DATA_DIR (a copied, restored or moved data
 * folder) is served from there or the start is refused; a new, empty one is never started in its
 * place, where every user and event would seem gone while new data went elsewhere.
 */
export function serverDirectory(dataDir: string, user: SystemUser): { dir: string; blocked?: string } {
  const relocated = relocatedServerDir(dataDir);
  const blocked = firstBlockedDirectory(dirname(resolve(dataDir)), user);
  if (holdsCluster(dataDir)) {
    if (holdsCluster(relocated)) {
      throw new ConfigError(
        `DATA_DIR ${resolve(dataDir)} holds an embedded PostgreSQL cluster, and so does ${relocated}, where this DATA_DIR's server ran before; ` +
          `Plaza will not choose between two databases: move away the one you do not want (${shellQuote(clusterDir(dataDir))} or ${shellQuote(clusterDir(relocated))}).`,
      );
    }
    if (blocked) {
      throw new ConfigError(
        `DATA_DIR ${resolve(dataDir)} holds an embedded PostgreSQL cluster that its server's user ${user.name} cannot reach (it cannot enter ${blocked}); ` +
          `Plaza will not start an empty database in its place. Fix it with: chmod o+x ${shellQuote(blocked)} (or move DATA_DIR to a directory ${user.name} can reach)`,
      );
    }
    return { dir: dataDir };
  }
  if (!blocked && !existsSync(relocated)) return { dir: dataDir };
  // Its own folders: /var/lib/plaza may be entered but not listed by others (0711); each server
  // directory in it is its server user's alone (0700).
  if (!existsSync(RELOCATED_ROOT)) mkdirSync(RELOCATED_ROOT, { recursive: true, mode: 0o711 });
  const stillBlocked = firstBlockedDirectory(relocated, user);
  if (stillBlocked) {
    throw new ConfigError(
      `Running as root, Plaza runs the embedded PostgreSQL server as the user ${user.name}, which cannot enter ${blocked ?? stillBlocked} (above DATA_DIR ${resolve(dataDir)}) nor ${stillBlocked}. ` +
        `Fix it with: chmod o+x ${shellQuote(stillBlocked)} (or set DATA_DIR to a directory ${user.name} can reach, or DATABASE_URL)`,
    );
  }
  if (!existsSync(relocated)) mkdirSync(relocated, { mode: 0o700 });
  chmodSync(relocated, 0o700);
  chownSync(relocated, user.uid, user.gid);
  return { dir: relocated, blocked };
}

/**
 * A cluster in DATA_DIR that is not the server user's (copied or restored by root: `cp -r`, a
 * tar without --same-owner) is given to it: PostgreSQL refuses a data directory it does not own.
 * DATA_DIR is Plaza's own 0700 folder, which it already gives to that user; nothing outside it
 * changes. Links are not followed.
 */
export function giveClusterTo(dataDir: string, user: SystemUser): void {
  const cluster = clusterDir(dataDir);
  if (!holdsCluster(dataDir) || statSync(cluster).uid === user.uid) return;
  const chownTree = (path: string) => {
    const stats = lstatSync(path);
    lchownSync(path, user.uid, user.gid);
    if (stats.isDirectory()) for (const entry of readdirSync(path)) chownTree(join(path, entry));
  };
  chownTree(cluster);
}

export const serverBinariesDir = (serverDir: string) => join(serverDir, 'postgres-bin');

/**
 * The binaries as the server user can run them: the installed ones when it can reach them, else a
 * copy in <server directory>/postgres-bin/<package version> (see serverDirectory),
 * made once and reused by later starts. The copy is the server user's, 0700 directories and
 * 0600/0700 files, like everything else the server keeps.
 */
export function reachableBinaries(binaries: EmbeddedBinaries, serverDir: string, user: SystemUser): EmbeddedBinaries {
  const copies = serverBinariesDir(serverDir);
  const installed = dirname(binaries.binDir);
  if (['bin', 'lib', 'share'].every((name) => !firstBlockedDirectory(join(installed, name), user))) {
    // Reachable again (a chmod since): the copy is 60 MB nobody uses.
    if (existsSync(copies)) rmSync(copies, { recursive: true, force: true });
    return binaries;
  }
  const target = join(copies, binaries.version);
  // A copy the server user does not own (a data folder copied by root, with its copy inside) is
  // made anew: that user could not enter it.
  if (!existsSync(join(target, 'bin')) || statSync(target).uid !== user.uid) {
    mkdirSync(copies, { recursive: true, mode: 0o700 });
    chownSync(copies, user.uid, user.gid);
    // Other versions (an upgrade) and drafts of interrupted copies go; the copy is made under a
    // draft name and renamed, so a start never finds half of one.
    for (const entry of readdirSync(copies)) rmSync(join(copies, entry), { recursive: true, force: true });
    const draft = join(copies, `.${binaries.version}.${process.pid}`);
    mkdirSync(draft, { mode: 0o700 });
    for (const name of ['bin', 'lib', 'share']) copyOwned(join(installed, name), join(draft, name), user);
    chownSync(draft, user.uid, user.gid);
    renameSync(draft, target);
  }
  const relocate = (path: string) => join(target, 'bin', path.slice(binaries.binDir.length + 1));
  return {
    ...binaries,
    binDir: join(target, 'bin'),
    libDir: join(target, 'lib'),
    postgres: relocate(binaries.postgres),
    initdb: relocate(binaries.initdb),
    pgCtl: relocate(binaries.pgCtl),
  };
}

/** Copies a tree, symlinks as they are (lib/ has relative ones), owned by `user`. */
function copyOwned(from: string, to: string, user: SystemUser): void {
  const stats = lstatSync(from);
  if (stats.isSymbolicLink()) {
    symlinkSync(readlinkSync(from), to);
    lchownSync(to, user.uid, user.gid);
    return;
  }
  if (stats.isDirectory()) {
    mkdirSync(to, { mode: 0o700 });
    for (const entry of readdirSync(from)) copyOwned(join(from, entry), join(to, entry), user);
  } else {
    copyFileSync(from, to);
    chmodSync(to, stats.mode & 0o111 ? 0o700 : 0o600);
  }
  chownSync(to, user.uid, user.gid);
}
