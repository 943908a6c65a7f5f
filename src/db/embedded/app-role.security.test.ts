import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { writeBackup } from '../../backup/backup.js';
import { restoreBackup } from '../../backup/restore.js';
import { migrate } from '../migrate.js';
import { openPostgres } from '../postgres.js';
import { findEmbeddedBinaries } from './binaries.js';
import { APP_ROLE, clusterDir, postgresSystemUser } from './cluster.js';
import { isAlive } from './processes.js';
import { connectionString, EmbeddedServer, type EmbeddedConnection } from './server.js';
import { reachableBinaries } from './server-user-access.js';
import { waitFor } from '../../testing/wait.js';

const quiet = { info: () => {}, warn: () => {}, error: () => {} };

async function withClient<T>(connection: EmbeddedConnection | pg.ClientConfig, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client(connection);
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

const migrated = async (connection: EmbeddedConnection) => {
  const db = openPostgres({ connectionString: connectionString(connection), poolSize: 1, connectTimeoutMs: 5000, statementTimeoutMs: 60_000 });
  try {
    return await migrate(db);
  } finally {
    await db.close();
  }
};

/** What the application's role of the embedded server must not be able to do, and must. */
async function assertApplicationRole(connection: EmbeddedConnection): Promise<void> {
  await withClient(connection, async (client) => {
    const me = (await client.query(`SELECT current_user AS name, rolsuper, rolcreatedb, rolcreaterole, rolbypassrls FROM pg_roles WHERE rolname = current_user`)).rows[0];
    assert.deepEqual(me, { name: APP_ROLE, rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolbypassrls: false });
    // A superuser's powers: running a program as the server's user, reading password hashes and files.
    for (const statement of [`COPY (SELECT 1) TO PROGRAM 'id'`, `SELECT rolpassword FROM pg_authid`, `SELECT pg_read_file('PG_VERSION')`, `CREATE DATABASE other`, `CREATE ROLE other`]) {
      await assert.rejects(client.query(statement), (error: { code?: string }) => error.code === '42501', statement);
    }
    // And it owns every table of Plaza's schema: migrations and restores create and drop them.
    const foreign = await client.query(`SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'S', 'v') AND pg_get_userbyid(c.relowner) <> current_user`);
    assert.deepEqual(foreign.rows, []);
    await client.query(`CREATE TABLE scratch (id int); DROP TABLE scratch`);
  });
}

describe('the embedded server runs Plaza as a role that owns its tables and nothing more', () => {
  const dirs: string[] = [];
  const freshDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'plaza-role-'));
    dirs.push(dir);
    return join(dir, 'data');
  };
  after(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  test('a new cluster: the application connects as a non-superuser that owns the migrated schema', async () => {
    const server = await EmbeddedServer.start(freshDir(), quiet, { throwaway: true });
    try {
      assert.equal(server.connection.user, APP_ROLE);
      assert.ok((await migrated(server.connection)).length > 0);
      await assertApplicationRole(server.connection);
      // plaza backup and plaza restore connect as this role too: it reads, drops and rebuilds it all.
      await withClient(server.connection, (client) => client.query(`INSERT INTO marketplaces (code, name) VALUES ('kept', 'Kept')`));
      const file = join(server.dataDir, 'plaza.backup.gz');
      await writeBackup(connectionString(server.connection), file);
      await restoreBackup(connectionString(server.connection), file);
      await withClient(server.connection, async (client) => assert.deepEqual((await client.query(`SELECT code FROM marketplaces`)).rows, [{ code: 'kept' }]));
      await assertApplicationRole(server.connection);
      await withClient(server.adminConnection, async (admin) => {
        assert.equal((await admin.query(`SELECT rolsuper FROM pg_roles WHERE rolname = current_user`)).rows[0].rolsuper, true);
      });
    } finally {
      await server.stop();
    }
  });

  test('a cluster made by the previous version (the application was its superuser) is upgraded at start: its data kept, its objects handed over', async () => {
    const dataDir = freshDir();
    const runAs = postgresSystemUser();
    const installed = await findEmbeddedBinaries();
    const binaries = runAs ? reachableBinaries(installed, join(dataDir, '..'), runAs) : installed;
    // What the previous version's first start did: initdb with `plaza` as the superuser, its
    // password in DATA_DIR/postgres.json, the database `plaza` created and migrated by that superuser.
    spawnSync('mkdir', ['-m', '700', dataDir]);
    if (runAs) {
      chownSync(join(dataDir, '..'), runAs.uid, runAs.gid);
      chownSync(dataDir, runAs.uid, runAs.gid);
    }
    const password = 'previous-version-password';
    const pwfile = join(dataDir, 'pw');
    writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
    if (runAs) chownSync(pwfile, runAs.uid, runAs.gid);
    const ids = runAs ? { uid: runAs.uid, gid: runAs.gid } : {};
    const initdb = spawnSync(binaries.initdb, [`--pgdata=${clusterDir(dataDir)}`, '--username=plaza', `--pwfile=${pwfile}`, '--auth=scram-sha-256', '--encoding=UTF8', '--locale=C', '--no-sync', '--no-instructions'], { ...ids, encoding: 'utf8' });
    assert.equal(initdb.status, 0, initdb.stderr);
    rmSync(pwfile);
    writeFileSync(join(dataDir, 'postgres.json'), JSON.stringify({ user: 'plaza', password }), { mode: 0o600 });
    const postmaster = spawn(binaries.postgres, ['-D', clusterDir(dataDir), '-p', '5432', '-c', 'listen_addresses=', '-c', `unix_socket_directories=${dataDir}`, '-c', 'fsync=off'], { ...ids, stdio: 'ignore' });
    try {
      const superuser = { host: dataDir, port: 5432, user: 'plaza', password, database: 'postgres' };
      const ready = () => {
        try {
          return readFileSync(join(clusterDir(dataDir), 'postmaster.pid'), 'utf8').includes('ready');
        } catch {
          return false;
        }
      };
      await waitFor(ready, { timeoutMs: 30_000, message: "the previous version's server did not start" });
      await withClient(superuser, (client) => client.query('CREATE DATABASE plaza'));
      await migrated({ ...superuser, database: 'plaza' });
      await withClient({ ...superuser, database: 'plaza' }, (client) => client.query(`INSERT INTO marketplaces (code, name) VALUES ('kept', 'Kept')`));
    } finally {
      postmaster.kill('SIGINT');
      await waitFor(() => !isAlive(postmaster.pid!), { timeoutMs: 30_000, message: "the previous version's server did not stop" });
    }

    const server = await EmbeddedServer.start(dataDir, quiet, { throwaway: true });
    try {
      const file = JSON.parse(readFileSync(join(dataDir, 'postgres.json'), 'utf8'));
      assert.equal(file.user, APP_ROLE);
      assert.deepEqual(file.admin, { user: 'plaza', password });
      assert.equal(file.appRoleReady, true);
      assert.deepEqual(await migrated(server.connection), []);
      await assertApplicationRole(server.connection);
      await withClient(server.connection, async (client) => {
        assert.deepEqual((await client.query(`SELECT code FROM marketplaces`)).rows, [{ code: 'kept' }]);
        await client.query(`INSERT INTO marketplaces (code, name) VALUES ('new', 'New')`);
      });
    } finally {
      await server.stop();
    }
    // A second start finds everything in place.
    const again = await EmbeddedServer.start(dataDir, quiet, { throwaway: true });
    try {
      await assertApplicationRole(again.connection);
    } finally {
      await again.stop();
    }
  });
});
