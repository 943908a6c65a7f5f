import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { findEmbeddedBinaries, type EmbeddedBinaries } from './binaries.js';
import { clusterDir, ensureCluster, postgresSystemUser } from './cluster.js';
import { ensurePrivateDirectory } from './permissions.js';
import { EmbeddedServer } from './server.js';
import { reachableBinaries, relocatedServerDir, serverBinariesDir, serverDirectory } from './server-user-access.js';

const isRoot = process.platform !== 'win32' && userInfo().uid === 0;
const quiet = { info: () => {}, warn: () => {}, error: () => {} };

// Only root runs the server as another user; for anyone else the binaries are their own.
describe('as root, the postgres user must reach DATA_DIR and the binaries', { skip: isRoot ? false : 'runs only as root (the server then runs as the postgres user)' }, () => {
  // mkdtemp makes a 0700 folder: opened to others' search (x) here, so that each test chooses
  // what blocks the way below it.
  const root = mkdtempSync(join(tmpdir(), 'plaza-reach-'));
  chmodSync(root, 0o711);
  after(() => rmSync(root, { recursive: true, force: true }));

  test('DATA_DIR below a folder the postgres user cannot enter: the server lives in /var/lib/plaza instead, and stays there', async () => {
    const blocked = join(root, 'private');
    mkdirSync(blocked, { mode: 0o700 });
    const dataDir = join(blocked, 'data');
    const relocated = relocatedServerDir(dataDir);
    after(() => rmSync(relocated, { recursive: true, force: true }));
    const warnings: string[] = [];
    const logger = { ...quiet, warn: (_details: object, message: string) => void warnings.push(message) };

    const server = await EmbeddedServer.start(dataDir, logger, { throwaway: true });
    try {
      assert.equal(server.serverDir, relocated);
      assert.ok(existsSync(join(clusterDir(relocated), 'PG_VERSION')));
      assert.equal(existsSync(clusterDir(dataDir)), false);
      assert.deepEqual([statSync(relocated).uid, statSync(relocated).mode & 0o777], [postgresSystemUser()!.uid, 0o700]);
      assert.ok(warnings.some((line) => line.includes(relocated)), warnings.join('\n'));
      const client = new pg.Client(server.connection);
      await client.connect();
      assert.equal((await client.query('SELECT 1 AS one')).rows[0].one, 1);
      await client.end();
    } finally {
      await server.stop();
    }
    // Reachable since: the cluster stays where it is, so the database does not seem to vanish.
    chmodSync(blocked, 0o701);
    assert.equal(serverDirectory(dataDir, postgresSystemUser()!).dir, relocated);
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
