import pg from 'pg';
import type { Credentials } from './cluster.js';

type Connection = pg.ClientConfig;

/**
 * The application's role in the embedded server: it logs in, owns Plaza's database and every object
 * in its schema, and nothing more: not a superuser, no CREATEDB, CREATEROLE, REPLICATION or
 * BYPASSRLS. So a flaw in Plaza that let someone run SQL could not read other databases' data or
 * pg_authid, nor run programs as the server's user (COPY … TO PROGRAM is a superuser's).
 *
 * Run by the owner as the superuser (`admin`) until it succeeded once for the cluster (postgres.json
 * then records appRoleReady), idempotent: it creates the role (with
 * the password of postgres.json), makes it the database's owner (so the schema `public`, owned by
 * pg_database_owner, is its too) and hands it what another role owns in that schema: everything a
 * cluster of an earlier version created as its superuser. REASSIGN OWNED cannot do that: the
 * bootstrap superuser also owns the system catalogs. Migrations then run as the application, which
 * owns what they create.
 */
export async function ensureAppRole(admin: Connection, app: Credentials, database: string): Promise<void> {
  await withClient({ ...admin, database: 'postgres' }, async (client) => {
    const role = client.escapeIdentifier(app.user);
    const exists = (await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1::text', [app.user])).rowCount;
    // The password of postgres.json: it is what clients read, the role follows it.
    await client.query(
      `${exists ? 'ALTER' : 'CREATE'} ROLE ${role} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT PASSWORD ${client.escapeLiteral(app.password)}`,
    );
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1::text', [database]);
    if (!rowCount) await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)} OWNER ${role}`);
    else await client.query(`ALTER DATABASE ${client.escapeIdentifier(database)} OWNER TO ${role}`);
  });
  await withClient({ ...admin, database }, async (client) => {
    // What migrations create in the schema: tables (partitions included, each has its own owner;
    // their indexes and identity sequences follow), views, free sequences, routines and types.
    const { rows } = await client.query<{ statement: string }>(
      `SELECT format('ALTER %s %s OWNER TO %I', CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'S' THEN 'SEQUENCE' WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END, c.oid::regclass, $1::text) AS statement
         FROM pg_class c
        WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S') AND pg_get_userbyid(c.relowner) <> $1::text
          AND NOT (c.relkind = 'S' AND EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')))
       UNION ALL
       SELECT format('ALTER ROUTINE %s OWNER TO %I', p.oid::regprocedure, $1::text)
         FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace AND pg_get_userbyid(p.proowner) <> $1::text
       UNION ALL
       SELECT format('ALTER TYPE %s OWNER TO %I', t.oid::regtype, $1::text)
         FROM pg_type t
        WHERE t.typnamespace = 'public'::regnamespace AND pg_get_userbyid(t.typowner) <> $1::text
          AND (t.typtype IN ('e', 'd') OR (t.typtype = 'c' AND (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c'))`,
      [app.user],
    );
    for (const { statement } of rows) await client.query(statement);
  });
}

async function withClient<T>(config: Connection, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client(config);
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
