import assert from 'node:assert/strict';
import pg from 'pg';
import type { Database, Queryable } from '../db/database.js';

/**
 * For tests that check what a statement's plan reads (the claim's, the intake's): the statements
 * recorded with their values by a stand-in for the database, their plans run with EXPLAIN ANALYZE,
 * prepared or not, and the plan node that read the most rows.
 */

export interface RecordedStatement {
  name: string;
  sql: string;
  params: readonly unknown[];
  /** Sent prepared (QueryOptions.prepare): PostgreSQL may run it with a generic plan. */
  prepared: boolean;
}

/**
 * A stand-in for the database that records each statement under `name` into `into` and answers
 * `answer(sql)`: what the caller reads back.
 */
export function recordingQueryable(into: RecordedStatement[], name: string, answer: (sql: string) => { rows: unknown[]; rowCount: number }): Queryable {
  return {
    exec: () => Promise.reject(new Error(`${name}: not a statement these tests record`)),
    query: async (sql, params = [], options = {}) => {
      into.push({ name, sql, params, prepared: options.prepare === true });
      return answer(sql) as never;
    },
  };
}

export interface PlanNode {
  'Node Type': string;
  'Actual Rows': number;
  'Actual Loops': number;
  /** Per loop, as Actual Rows. */
  'Rows Removed by Filter'?: number;
  'Rows Removed by Join Filter'?: number;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/** The plan node that read the most rows (returned, or read and dropped by a filter; times its loops), anywhere in the tree. */
export function busiest(node: PlanNode): { rows: number; node: string } {
  const read = node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Join Filter'] ?? 0);
  const on = node['Index Name'] ?? node['Relation Name'];
  const own = { rows: read * node['Actual Loops'], node: `${node['Node Type']}${on ? ` on ${on}` : ''}` };
  return (node.Plans ?? []).map(busiest).reduce((a, b) => (b.rows > a.rows ? b : a), own);
}

/** A value as an SQL literal of unknown type (quoted by the driver), which PostgreSQL casts to the parameter's type. */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (value instanceof Date) return pg.escapeLiteral(value.toISOString());
  const text = Array.isArray(value)
    ? `{${value.map((element) => (element === null ? 'NULL' : `"${String(element).replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`)).join(',')}}`
    : String(value);
  return pg.escapeLiteral(text);
}

/** EXECUTE of a prepared statement, its values written in (a utility statement takes no parameters). */
export const execute = (name: string, params: readonly unknown[]) => `EXECUTE ${name}(${params.map(literal).join(', ')})`;

/** The plan of `sql` as it ran (EXPLAIN ANALYZE): its changes are the transaction's. */
export async function explain(tx: Queryable, sql: string, params: readonly unknown[] = []): Promise<PlanNode> {
  const { rows } = await tx.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
  return rows[0]!['QUERY PLAN'][0].Plan;
}

/** Runs `work` in a transaction that is then rolled back, `settings` its first statement: what it wrote is gone for the next test. */
export async function rolledBack(db: Database, work: (tx: Queryable) => Promise<void>, settings?: string): Promise<void> {
  const undo = new Error('rolled back');
  await assert.rejects(
    db.transaction(async (tx) => {
      if (settings) await tx.exec(settings);
      await work(tx);
      throw undo;
    }),
    (error) => {
      if (error !== undo) throw error;
      return true;
    },
  );
}
