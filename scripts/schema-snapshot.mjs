#!/usr/bin/env node
// Writes migrations/schema.sql: the schema that migrations/ produce on an empty database (run by
// `npm run schema:snapshot`, which builds first). It migrates a temporary database on DATABASE_URL's
// server, or, without DATABASE_URL, on a throwaway embedded PostgreSQL server started here, and
// writes what src/db/schema-snapshot.ts reads from the catalog. src/db/schema-snapshot.test.ts
// checks that the file is up to date.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const { migrate } = await import('../dist/src/db/migrate.js');
const { describeSchema } = await import('../dist/src/db/schema-snapshot.js');
const { withAdminClient, withDatabase } = await import('../dist/src/testing/test-database.js');
const { openPostgres } = await import('../dist/src/db/postgres.js');

const cleanups = [];
try {
  let url = process.env.DATABASE_URL;
  if (!url) {
    const { EmbeddedServer, connectionString } = await import('../dist/src/db/embedded/server.js');
    const dir = mkdtempSync(join(tmpdir(), 'plaza-schema-pg-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const quiet = { info: () => {}, warn: () => {}, error: (_details, message) => console.error(message) };
    const server = await EmbeddedServer.start(dir, quiet, { throwaway: true });
    cleanups.push(() => server.stop());
    url = connectionString(server.adminConnection);
  }
  const name = `plaza_schema_${process.pid}_${randomBytes(4).toString('hex')}`;
  await withAdminClient(url, (admin) => admin.query(`CREATE DATABASE ${name}`));
  cleanups.push(() => withAdminClient(url, (admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)));
  const db = openPostgres({ connectionString: withDatabase(url, name), poolSize: 1, connectTimeoutMs: 5000, statementTimeoutMs: 60_000 });
  try {
    await migrate(db);
    writeFileSync(join(root, 'migrations', 'schema.sql'), await describeSchema(db));
  } finally {
    await db.close();
  }
  console.log('Wrote migrations/schema.sql.');
} finally {
  for (const cleanup of cleanups.reverse()) await Promise.resolve().then(cleanup).catch((error) => console.error('cleanup:', error));
}
