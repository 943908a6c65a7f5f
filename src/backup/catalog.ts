import type { Queryable } from '../db/database.js';

/** A table of Plaza's schema and the columns a backup stores (generated columns are recomputed). */
export interface TableInfo {
  name: string;
  columns: string[];
}

/** schema_migrations travels in the manifest: restore rebuilds it by running the migrations. */
const MIGRATIONS_TABLE = 'schema_migrations';

/**
 * Every table of the current schema, read from the catalog (not a hard-coded list, so a new
 * migration's tables are included), ordered so that a table comes after the tables its foreign
 * keys reference: loading in this order satisfies every constraint as rows arrive.
 */
export async function listTables(db: Queryable): Promise<TableInfo[]> {
  const { rows: columns } = await db.query<{ table: string; column: string }>(
    `SELECT c.relname AS table, a.attname AS column
       FROM pg_class c
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
      -- A partitioned table is read and loaded whole (its partitions route the rows): its
      -- partitions are not tables of their own here.
      WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relname <> $1
      ORDER BY c.relname, a.attnum`,
    [MIGRATIONS_TABLE],
  );
  const { rows: references } = await db.query<{ child: string; parent: string }>(
    `SELECT DISTINCT child.relname AS child, parent.relname AS parent
       FROM pg_constraint k
       JOIN pg_class child ON child.oid = k.conrelid
       JOIN pg_class parent ON parent.oid = k.confrelid
      WHERE k.contype = 'f' AND child.relnamespace = current_schema()::regnamespace AND k.conrelid <> k.confrelid`,
  );
  const tables = new Map<string, TableInfo>();
  for (const { table, column } of columns) {
    const info = tables.get(table) ?? { name: table, columns: [] };
    info.columns.push(column);
    tables.set(table, info);
  }
  return orderByReferences([...tables.values()], references);
}

/** Kahn's topological sort, alphabetical among equals so that backups of one schema list tables alike. */
export function orderByReferences(tables: TableInfo[], references: Array<{ child: string; parent: string }>): TableInfo[] {
  const byName = new Map(tables.map((table) => [table.name, table]));
  const waitingFor = new Map(tables.map((table) => [table.name, new Set<string>()]));
  for (const { child, parent } of references) if (byName.has(child) && byName.has(parent)) waitingFor.get(child)!.add(parent);
  const ordered: TableInfo[] = [];
  while (waitingFor.size > 0) {
    const ready = [...waitingFor].filter(([, parents]) => parents.size === 0).map(([name]) => name).sort();
    if (ready.length === 0) throw new Error(`The foreign keys between ${[...waitingFor.keys()].join(', ')} form a cycle: no load order satisfies them.`);
    for (const name of ready) {
      ordered.push(byName.get(name)!);
      waitingFor.delete(name);
      for (const parents of waitingFor.values()) parents.delete(name);
    }
  }
  return ordered;
}
