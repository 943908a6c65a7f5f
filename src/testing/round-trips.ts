import pg from 'pg';

/**
 * The statements sent to PostgreSQL while `work` runs, as their first words: every call of
 * pg's Client#query is one round trip (the pool's query and the transaction's BEGIN and COMMIT all
 * go through it). For tests that pin how many round trips a request path costs (issue 33,
 * bench/results/api-paths.md). Not for concurrent tests: it counts every client of the process.
 */
export async function recordRoundTrips(work: () => Promise<unknown>): Promise<string[]> {
  const statements: string[] = [];
  const prototype = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = prototype.query;
  prototype.query = function (this: unknown, ...args: unknown[]) {
    const first = args[0];
    const text = typeof first === 'string' ? first : (first as { text?: string } | undefined)?.text ?? '';
    statements.push(text.replace(/\s+/g, ' ').trim().slice(0, 60));
    return original.apply(this, args);
  };
  try {
    await work();
  } finally {
    prototype.query = original;
  }
  return statements;
}
