#!/usr/bin/env node
// Start-up time of `plaza serve` on the embedded PostgreSQL server: from spawning the process to the
// first 200 from /readyz on the operations listener. One first start (an empty DATA_DIR: initdb,
// migrations, keys) and then --later N later starts on the same DATA_DIR; prints each and the median.
//
//   npm run build && node scripts/start-time.mjs [--later 5] [--port 4200] [--data-dir DIR] [--log]
//
// --port P uses P for the API and P+1 for the operations listener. Without --data-dir, a temporary
// directory that is removed at the end. --log prints the service's log lines with their time since
// spawn (LOG_LEVEL=debug), to see where a start spends its time. It does not build: run
// `npm run build` first (what `npm start` runs is dist/src/main.js).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
/* global fetch, AbortSignal -- Node's own (18 and later); the lint config lists only the older globals */

const { values } = parseArgs({
  options: {
    later: { type: 'string', default: '5' },
    port: { type: 'string', default: '4200' },
    'data-dir': { type: 'string' },
    log: { type: 'boolean', default: false },
  },
});
const main = new URL('../dist/src/main.js', import.meta.url).pathname;
const port = Number(values.port);
const dataDir = values['data-dir'] ?? mkdtempSync(join(tmpdir(), 'plaza-start-time-'));
// A --data-dir that already holds a cluster has no first start: its first run is a later start.
const isNew = !existsSync(join(dataDir, 'postgres', 'PG_VERSION'));
const env = {
  ...process.env,
  DATA_DIR: dataDir,
  HOST: '127.0.0.1',
  PORT: String(port),
  METRICS_PORT: String(port + 1),
  LOG_LEVEL: values.log ? 'debug' : 'warn',
  LOG_FORMAT: 'json',
};
delete env.DATABASE_URL;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function ready() {
  try {
    const response = await fetch(`http://127.0.0.1:${port + 1}/readyz`, { signal: AbortSignal.timeout(1000) });
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}

/** Spawns `plaza serve`, returns the milliseconds to the first /readyz 200, then stops it (SIGTERM). */
async function start() {
  const started = performance.now();
  const child = spawn(process.execPath, ['--enable-source-maps', main, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let exited = false;
  child.once('exit', () => (exited = true));
  let output = '';
  const collect = (chunk) => {
    const at = performance.now() - started;
    for (const line of chunk.toString().split('\n').filter(Boolean)) output += `${at.toFixed(0).padStart(6)} ms  ${line}\n`;
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  // Polling every 5 ms adds at most 5 ms to the figure.
  while (!(await ready())) {
    if (exited) throw new Error(`plaza serve exited before it was ready:\n${output}`);
    await sleep(5);
  }
  const ms = performance.now() - started;
  const cpu = cpuMs(child.pid);
  child.kill('SIGTERM');
  if (!exited) await new Promise((resolve) => child.once('exit', resolve));
  if (values.log) process.stdout.write(`${output}  ready at ${ms.toFixed(0)} ms\n`);
  return { ms, cpu };
}

/**
 * CPU time (user + system) the process used so far, from /proc (Linux; undefined elsewhere). On a
 * shared machine the wall time depends on the other load; the CPU time much less.
 */
function cpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime, fields 14 and 15, in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

const seconds = (ms) => `${(ms / 1000).toFixed(2)} s`;
const describe = ({ ms, cpu }) => `${seconds(ms)}${cpu === undefined ? '' : ` (Plaza's CPU time ${seconds(cpu)})`}`;
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor((list.length - 1) / 2)];
try {
  const first = await start();
  console.log(`${isNew ? 'first start (new' : 'start 0 (existing'} DATA_DIR ${dataDir}): ${describe(first)}`);
  const later = [];
  for (let i = 0; i < Number(values.later); i++) {
    later.push(await start());
    console.log(`later start ${i + 1}: ${describe(later.at(-1))}`);
  }
  if (later.length) {
    const walls = later.map((start) => start.ms);
    const cpus = later.map((start) => start.cpu);
    console.log(`later starts: median ${describe({ ms: median(walls), cpu: cpus.includes(undefined) ? undefined : median(cpus) })}, min ${seconds(Math.min(...walls))}, max ${seconds(Math.max(...walls))}`);
  }
} finally {
  if (!values['data-dir']) rmSync(dataDir, { recursive: true, force: true });
}
