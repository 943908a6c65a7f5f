import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { ConfigError } from '../../config.js';
import { findEmbeddedBinaries, type EmbeddedBinaries } from './binaries.js';
import { clusterDir, ensureCluster, postgresSystemUser } from './cluster.js';
import { ensurePrivateDirectory } from './permissions.js';
import { EmbeddedServer } from './server.js';
import { reachableBinaries, relocatedServerDir, serverBinariesDir, serverDirectory } from './server-user-access.js';

const holdsCluster = (dir: string) => existsSync(join(clusterDir(dir), 'PG_VERSION'));

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

  test('DATA_DIR holding a cluster below such a folder (a copied data folder): refused in one line, never replaced by an empty one; served once reachable', async () => {
    // A data folder with a user in it, made where the postgres user can reach it.
    const original = join(root, 'original');
    mkdirSync(original, { mode: 0o711 });
    const first = await EmbeddedServer.start(join(original, 'data'), quiet, { throwaway: true });
    try {
      const client = new pg.Client(first.connection);
      await client.connect();
      await client.query(`CREATE TABLE kept (name text); INSERT INTO kept VALUES ('alice')`);
      await client.end();
    } finally {
      await first.stop();
    }
    // Copied by root into a 0700 folder (mktemp -d, /root): every file now root's.
    const blocked = join(root, 'copied');
    mkdirSync(blocked, { mode: 0o700 });
    const dataDir = join(blocked, 'data');
    execFileSync('cp', ['-r', join(original, 'data'), dataDir]);
    const relocated = relocatedServerDir(dataDir);
    after(() => rmSync(relocated, { recursive: true, force: true }));

    await assert.rejects(EmbeddedServer.start(dataDir, quiet, { throwaway: true }), (error: Error) => {
      assert.ok(error instanceof ConfigError, String(error)); // exit code 2, one line, no stack
      assert.doesNotMatch(error.message, /\n/);
      assert.match(error.message, new RegExp(`${dataDir}.*cluster.*cannot enter ${blocked}\\b.*chmod o\\+x ${blocked}`));
      return true;
    });
    assert.equal(holdsCluster(relocated), false, 'no empty cluster was started in its place');

    // The fix the message names: the copied cluster itself is served, its user still there.
    chmodSync(blocked, 0o701);
    const server = await EmbeddedServer.start(dataDir, quiet, { throwaway: true });
    try {
      assert.equal(server.serverDir, dataDir);
      assert.equal(statSync(join(clusterDir(dataDir), 'base')).uid, postgresSystemUser()!.uid);
      const client = new pg.Client(server.connection);
      await client.connect();
      assert.deepEqual((await client.query('SELECT name FROM kept')).rows, [{ name: 'alice' }]);
      await client.end();
    } finally {
      await server.stop();
    }
  });

  test('a cluster in DATA_DIR and another in its /var/lib/plaza place: refused, naming both', () => {
    const dataDir = join(root, 'twice', 'data');
    const relocated = relocatedServerDir(dataDir);
    after(() => rmSync(relocated, { recursive: true, force: true }));
    for (const dir of [dataDir, relocated]) {
      mkdirSync(clusterDir(dir), { recursive: true, mode: 0o700 });
      writeFileSync(join(clusterDir(dir), 'PG_VERSION'), '17\n');
    }
    assert.throws(() => serverDirectory(dataDir, postgresSystemUser()!), (error: Error) =>
      error instanceof ConfigError && !error.message.includes('\n') && error.message.includes(clusterDir(dataDir)) && error.message.includes(clusterDir(relocated)));
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
