import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { progress } from './lib/cleanup.js';
import { createBenchDatabase, dropAbandonedDatabases, type BenchDatabase, type Engine } from './lib/database.js';
import { killAll } from './lib/processes.js';
import { startTraceSink, type TraceSink } from './lib/trace-sink.js';
import { scaleFor, type Row, type RunState } from './lib/scenario.js';
import { headerLines, machineLine, resultsMarkdown, rowLine } from './lib/table.js';
import { select, USAGE } from './scenarios/index.js';

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: { smoke: { type: 'boolean', default: false }, traces: { type: 'boolean', default: false }, db: { type: 'string' }, repeat: { type: 'string', default: '1' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const scenarios = select(positionals);
  const rounds = Number(values.repeat);
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--repeat must be a whole number of at least 1\n\n${USAGE}`);
  // PostgreSQL first: it is the production engine, and most targets are stated for it.
  let engines: Engine[] = process.env.DATABASE_URL ? ['postgres', 'embedded'] : ['embedded'];
  if (values.db) {
    if (values.db !== 'embedded' && values.db !== 'postgres') throw new Error(`--db must be embedded or postgres\n\n${USAGE}`);
    if (values.db === 'postgres' && !process.env.DATABASE_URL) throw new Error('--db postgres needs DATABASE_URL');
    engines = [values.db];
  }
  if (engines.includes('postgres')) await dropAbandonedDatabases(process.env.DATABASE_URL!);
  // --traces: every service exports its spans over OTLP/HTTP, to OTEL_EXPORTER_OTLP_ENDPOINT when
  // set (a real collector), else to a sink of the bench's that discards them (lib/trace-sink.ts).
  let sink: TraceSink | undefined;
  if (values.traces && !process.env.OTEL_EXPORTER_OTLP_ENDPOINT) {
    sink = await startTraceSink(Number(process.env.BENCH_TRACE_SINK_PORT ?? 0));
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = sink.url;
  }
  const tracing = values.traces || Boolean(process.env.OTEL_EXPORTER_OTLP_ENDPOINT);
  const scale = scaleFor(values.smoke!);
  const startedAt = new Date();
  const machine = await machineLine();
  console.log(`Plaza benchmarks (${values.smoke ? 'smoke' : 'full'}${tracing ? ', traces on' : ''}) on ${machine}\n`);
  console.log(headerLines().join('\n'));

  const rows: Row[] = [];
  // A full run of everything is the commit-worthy table; smoke and partial runs do not overwrite it.
  const name = values.smoke ? 'smoke.md' : positionals.length === 0 && !values.db ? 'latest.md' : 'partial.md';
  const dir = fileURLToPath(new URL('../../bench/results/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  const command = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
  // Rewritten after every scenario, so that an interrupted run still leaves what it measured.
  const write = (finished: boolean) =>
    writeFileSync(`${dir}${name}`, resultsMarkdown(rows, { machine, startedAt, mode: `${values.smoke ? 'smoke' : 'full'}${tracing ? ', traces on' : ''}${finished ? '' : ', in progress'}`, command }));

  for (const engine of engines) {
    const state: RunState = { peakRss: [], serverMemory: [] };
    // --repeat: the whole selection again, round after round, so that runs to be compared alternate
    // in one window (scenario 4's Plaza and peer runs, for instance) rather than follow each other.
    for (const scenario of Array.from({ length: rounds }, () => scenarios).flat()) {
      progress(`[${engine}] ${scenario.id} ${scenario.name}`);
      const databases: BenchDatabase[] = [];
      const started = Date.now();
      let produced: Row[];
      try {
        produced = await scenario.run({
          engine,
          scale,
          state,
          newDatabase: async () => {
            const db = await createBenchDatabase(engine);
            databases.push(db);
            return db;
          },
        });
      } catch (error) {
        console.error(`bench: ${scenario.id} ${scenario.name} on ${engine} is broken:`, error);
        const message = (error instanceof Error ? error.message : String(error)).split('\n')[0]!.slice(0, 160);
        produced = [{ scenario: `${scenario.id} ${scenario.name}`, database: engine, figure: `error: ${message}`, ceiling: '—', ratio: '—', target: '—', met: 'BROKEN' }];
      }
      for (const db of databases) await db.dispose().catch((error: Error) => console.error(`bench: could not remove a database: ${error.message}`));
      progress(`[${engine}] ${scenario.id} done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      for (const row of produced) console.log(rowLine(row));
      rows.push(...produced);
      write(false);
    }
  }

  write(true);
  if (sink) {
    console.log(`\nTraces: ${sink.exports} OTLP exports, ${(sink.bytes / 1024 / 1024).toFixed(1)} MiB, to the bench's sink.`);
    await sink.close();
  }
  console.log(`\nWritten to bench/results/${name} in ${((Date.now() - startedAt.getTime()) / 1000).toFixed(0)} s.`);
  // Missing a target is a finding, not a failure; only a scenario that could not measure fails the run.
  return rows.some((row) => row.met === 'BROKEN') ? 1 : 0;
}

main().then(
  (code) => {
    killAll();
    process.exit(code);
  },
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    killAll();
    process.exit(2);
  },
);
