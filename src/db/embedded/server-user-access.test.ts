import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ConfigError } from '../../config.js';
import { findEmbeddedBinaries, type EmbeddedBinaries } from './binaries.js';
import { clusterDir, ensureCluster, postgresSystemUser } from './cluster.js';
import { ensurePrivateDirectory } from './permissions.js';
import { EmbeddedServer } from './server.js';
import { assertDataDirReachable, reachableBinaries, serverBinariesDir } from './server-user-access.js';

const isRoot = process.platform !== 'win32' && userInfo().uid === 0;
const quiet = { info: () => {}, warn: () => {}, error: () => {} };

// Only root runs the server as another user; for anyone else the binaries are their own.
describe('as root, the postgres user must reach DATA_DIR and the binaries', { skip: isRoot ? false : 'runs only as root (the server then runs as the postgres user)' }, () => {
  // mkdtemp makes a 0700 folder: opened to others' search (x) here, so that each test chooses
  // what blocks the way below it.
  const root = mkdtempSync(join(tmpdir(), 'plaza-reach-'));
  chmodSync(root, 0o711);
  after(() => rmSync(root, { recursive: true, force: true }));

  test('DATA_DIR below a folder the postgres user cannot enter: one line naming the folder and the chmod that fixes it', async () => {
    const blocked = join(root, 'private');
    mkdirSync(blocked, { mode: 0o700 });
    const dataDir = join(blocked, 'data');
    const message = (error: Error) =>
      error instanceof ConfigError && !error.message.includes('\n') && error.message.includes(`cannot enter ${blocked} `) && error.message.includes(`chmod o+x ${blocked}`);
    assert.throws(() => assertDataDirReachable(dataDir, postgresSystemUser()!), message);
    await assert.rejects(EmbeddedServer.start(dataDir, quiet, { throwaway: true }), message);
    chmodSync(blocked, 0o701);
    assertDataDirReachable(dataDir, postgresSystemUser()!);
  });

  test('binaries below such a folder are copied into DATA_DIR once, run from there, and the copy goes when no longer needed', async () => {
    const runAs = postgresSystemUser()!;
    const installed = await findEmbeddedBinaries();
    // A clone below a 0700 folder: the same package, installed where postgres cannot go.
    const blocked = join(root, 'clone');
    mkdirSync(blocked, { mode: 0o700 });
    const native = join(blocked, 'native');
    cpSync(dirname(installed.binDir), native, { recursive: true, verbatimSymlinks: true });
    const at = (dir: string) => (path: string) => join(native, dir, path.slice(installed.binDir.length + 1));
    const unreachable: EmbeddedBinaries = { ...installed, binDir: join(native, 'bin'), libDir: join(native, 'lib'), postgres: at('bin')(installed.postgres), initdb: at('bin')(installed.initdb), pgCtl: at('bin')(installed.pgCtl) };
    assert.equal(spawnSync(unreachable.postgres, ['-V'], { uid: runAs.uid, gid: runAs.gid }).error?.message.includes('EACCES'), true);

    const dataDir = join(root, 'data');
    ensurePrivateDirectory(dataDir);
    chownSync(dataDir, runAs.uid, runAs.gid);
    const copied = reachableBinaries(unreachable, dataDir, runAs);
    assert.ok(copied.postgres.startsWith(join(serverBinariesDir(dataDir), installed.version, 'bin')), copied.postgres);
    const version = spawnSync(copied.postgres, ['-V'], { uid: runAs.uid, gid: runAs.gid, encoding: 'utf8' });
    assert.equal(version.status, 0, version.stderr);
    assert.match(version.stdout, /PostgreSQL\) 17\./);
    // Like the rest of DATA_DIR: the server user's, nothing for group or others.
    const copy = statSync(copied.postgres);
    assert.deepEqual([copy.uid, copy.mode & 0o777], [runAs.uid, 0o700]);
    assert.equal(statSync(join(copied.libDir)).mode & 0o077, 0);

    // initdb, the step that failed with EACCES, runs from the copy (with its lib/ and share/).
    await ensureCluster(dataDir, copied, runAs, quiet, true);
    assert.ok(existsSync(join(clusterDir(dataDir), 'PG_VERSION')));

    // A later start reuses the copy.
    const before = statSync(copied.postgres).mtimeMs;
    assert.equal(reachableBinaries(unreachable, dataDir, runAs).postgres, copied.postgres);
    assert.equal(statSync(copied.postgres).mtimeMs, before);

    // `chmod o+x` on the folder: the installed binaries again, and the copy is removed.
    chmodSync(blocked, 0o701);
    assert.equal(reachableBinaries(unreachable, dataDir, runAs).postgres, unreachable.postgres);
    assert.equal(existsSync(serverBinariesDir(dataDir)), false);
  });
});
