import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { projectRoot } from './paths.js';

/** What the project says about itself must hold in a clone of the repository (issue 13, item 16). */
const read = (path: string) => readFileSync(join(projectRoot, path), 'utf8');
const documents = ['README.md', ...readdirSync(join(projectRoot, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

test('no document links outside the repository', () => {
  for (const path of documents) {
    const depth = path.split('/').length - 1;
    for (const [, target] of read(path).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^(https?:|mailto:|#)/.test(target!)) continue;
      const ups = target!.split('/').filter((segment) => segment === '..').length;
      assert.ok(ups <= depth, `${path} links to ${target}, outside the repository`);
      assert.doesNotMatch(target!, /shared\/spec/, `${path} links to ${target}`);
    }
  }
});

test('the README states the retry schedule of docs/delivery.md, not "a day"', () => {
  const readme = read('README.md');
  assert.doesNotMatch(readme, /retried for a day/);
  assert.match(read('docs/delivery.md'), /11 attempts over about 47 hours/);
  assert.match(readme, /11 attempts over about 47 hours/);
});

test('the 8-character password minimum is documented', () => {
  assert.match(read('docs/authentication.md'), /at least 8\s+characters/);
});

test('engines, README and CI name the same Node lines, and not Node 20', () => {
  const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
  assert.equal(engines, '^22.15.0 || >=24.0.0');
  const readme = read('README.md');
  assert.match(readme, /Node\.js 22 \(22\.15\+\) or 24/);
  assert.doesNotMatch(readme, /20\.19\+/);
  const ci = read('.ci/run');
  assert.match(ci, /for major in 22 24/);
  assert.match(ci, /run_suite\nPATH="\$NODE24_PATH" run_suite/);
});

test('every way of starting Plaza gives Node the same heap limit, and the benchmark starts it so', () => {
  const flag = '--max-old-space-size=2000';
  const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
  for (const name of ['start', 'start:prod']) assert.ok(scripts[name]!.split(' ').includes(flag), `package.json ${name}`);
  assert.match(read('Dockerfile'), new RegExp(`NODE_OPTIONS=${flag}\\b`));
  assert.match(read('deploy/plaza.service'), new RegExp(`^Environment=.*NODE_OPTIONS=${flag}\\b`, 'm'));
  assert.match(read('scripts/ci-production-path.sh'), new RegExp(`IMAGE_USER=.*NODE_OPTIONS=${flag}\\b`));
  assert.ok(read('bench/lib/service.ts').includes(`PLAZA_NODE_FLAGS = ['${flag}']`), 'bench/lib/service.ts');
  assert.match(read('docs/operations.md'), new RegExp(`${flag}`));
});

/** The shell blocks of the README's tour, each pasted into whichever terminal (issue 34, item 4). */
function tourBlocks(): string[] {
  const readme = read('README.md');
  const tour = readme.slice(readme.indexOf('## A first tour'), readme.indexOf('## Documentation'));
  return [...tour.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
}

test('each block of the README tour stands alone: a shell variable it uses is set in that block, or read from a file', () => {
  const blocks = tourBlocks();
  assert.ok(blocks.length >= 6, `${blocks.length} blocks`);
  for (const block of blocks) {
    // The JavaScript of `node -p '…'` uses ${…} of its own: only the shell's part is looked at.
    // Comments first: their apostrophes ("the delivery's") are not quotes.
    const shell = block.replace(/\s#\s.*$/gm, '').replace(/'[^']*'/g, "''");
    const set = new Set([...shell.matchAll(/(?:^|[\s;(])(?:for\s+)?([A-Za-z_][A-Za-z0-9_]*)(?:=|\s+in\s)/gm)].map((match) => match[1]!));
    for (const [, name] of shell.matchAll(/\$\{?([A-Za-z_][A-Za-z0-9_]*)/g)) {
      assert.ok(set.has(name!), `the tour block\n${block}\nuses $${name}, which another terminal does not have: keep it in a file under tour/`);
    }
  }
});

test('the README tour says how to get a new access token, and shows per-entity order when a receiver failed', () => {
  const readme = read('README.md');
  assert.match(readme, /After 15 minutes/);
  assert.ok(tourBlocks().some((block) => block.includes('/api/v2/auth/refresh') && block.includes('tour/login.json')));
  assert.match(readme, /blocked_by=2/);
  assert.match(readme, /waiting behind #2/);
});
