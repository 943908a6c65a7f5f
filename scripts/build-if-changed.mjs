#!/usr/bin/env node
// `npm start` (development) builds first, but only when a source file is newer than the last
// build: an incremental tsc that finds nothing to do still takes several seconds here.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const stamp = join(root, 'dist/.tsbuildinfo');

function newestChange(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((name) => newestChange(join(path, name))));
}

const sources = ['src', 'bench', 'test', 'tsconfig.json', 'package.json'].map((name) => join(root, name));
const builtAt = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
if (Math.max(...sources.map(newestChange)) <= builtAt) process.exit(0);

// Say so: the first build of a fresh clone is silent for one to two minutes on a small machine.
const first = !existsSync(stamp);
process.stderr.write(
  first
    ? 'plaza: compiling the TypeScript sources into dist/ (first build: about 1-2 minutes on a small machine; later starts rebuild only after a change, in seconds)...\n'
    : 'plaza: a source file changed since the last build: compiling (usually 5-30 seconds)...\n',
);
const started = Date.now();
const tsc = spawnSync('npx', ['--no-install', 'tsc', '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
if (tsc.status !== 0) {
  process.stderr.write(`plaza: the build failed after ${((Date.now() - started) / 1000).toFixed(0)} s (the errors are above)\n`);
  process.exit(tsc.status ?? 1);
}
process.stderr.write(`plaza: compiled in ${((Date.now() - started) / 1000).toFixed(0)} s; starting\n`);
// tsc leaves its build info alone when the outputs did not change: mark this check as done.
const now = new Date();
if (existsSync(stamp)) utimesSync(stamp, now, now);
