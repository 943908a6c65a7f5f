import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { describeConfig } from '../../src/config.js';
import { projectRoot } from '../../src/paths.js';

// This machine cannot build images or run compose or systemd: these checks hold the recipes to the
// conventions docs/operations.md promises, and scripts/ci-production-path.sh runs their commands.

const read = (path: string) => readFileSync(join(projectRoot, path), 'utf8');

/** The Dockerfile's instructions per stage, continuation lines joined. */
function dockerfileStages(text: string): Map<string, string[]> {
  const stages = new Map<string, string[]>();
  let current: string[] = [];
  for (const line of text.replace(/\\\n\s*/g, ' ').split('\n')) {
    const instruction = line.trim();
    if (!instruction || instruction.startsWith('#')) continue;
    const from = /^FROM\s+\S+\s+AS\s+(\S+)$/i.exec(instruction);
    if (from) stages.set(from[1]!, (current = []));
    current.push(instruction);
  }
  return stages;
}

test('Dockerfile: the build stage compiles from the files it copies (what it builds imports nothing outside src/)', () => {
  const build = dockerfileStages(read('Dockerfile')).get('build')!;
  const copied = build.filter((line) => line.startsWith('COPY ')).flatMap((line) => line.split(/\s+/).slice(1, -1));
  for (const path of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'src']) assert.ok(copied.includes(path), `the build stage copies ${path}`);
  const config = JSON.parse(read('tsconfig.build.json')) as { include: string[]; exclude: string[] };
  assert.deepEqual([config.include, config.exclude], [['src/**/*.ts'], ['src/**/*.test.ts']]);
  const sources = readdirSync(join(projectRoot, 'src'), { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'));
  assert.ok(sources.length > 50);
  for (const file of sources) {
    for (const [, target] of read(join('src', file)).matchAll(/from '(\.[^']+)'/g)) {
      const resolved = resolve(projectRoot, 'src', dirname(file), target!);
      assert.ok(resolved.startsWith(join(projectRoot, 'src') + sep), `src/${file} imports ${target}, which the build stage does not copy`);
    }
  }
});

test('Dockerfile: a build stage with the toolchain, a runtime stage without it, run as the unprivileged user', () => {
  const stages = dockerfileStages(read('Dockerfile'));
  assert.deepEqual([...stages.keys()], ['build', 'runtime']);
  const build = stages.get('build')!;
  const runtime = stages.get('runtime')!;
  assert.ok(build.includes('RUN npm ci --no-audit --no-fund') && build.includes('RUN npm run build:image'));
  assert.ok(runtime.some((line) => /^RUN npm ci --omit=dev\b/.test(line)), 'production dependencies only');
  assert.ok(runtime.includes('COPY --from=build /app/dist/src ./dist/src'));
  assert.ok(runtime.includes('COPY public ./public'), 'the portal assets are in the image');
  assert.equal(runtime.filter((line) => line.startsWith('USER ')).at(-1), 'USER node');

  const dataDir = /DATA_DIR=(\S+)/.exec(runtime.find((line) => line.startsWith('ENV '))!)![1];
  assert.ok(runtime.includes(`VOLUME ["${dataDir}"]`), 'DATA_DIR is the volume');
  assert.ok(runtime.some((line) => line.startsWith('HEALTHCHECK ') && line.includes('/healthz')));
  const cmd = JSON.parse(runtime.find((line) => line.startsWith('CMD '))!.slice(4)) as string[];
  assert.deepEqual(cmd.slice(0, 1).concat(cmd.slice(-2)), ['node', 'bin/plaza.js', 'serve'], 'node itself is PID 1, not npm or a shell');
});

test('compose.yaml: PostgreSQL, and separate api and worker services of one image on it', () => {
  const compose = parse(read('compose.yaml'), { merge: true }) as {
    services: Record<string, { image?: string; command?: string[]; init?: boolean; environment?: Record<string, string>; healthcheck?: { disable?: boolean }; stop_grace_period?: string }>;
  };
  const { postgres, api, worker } = compose.services;
  assert.match(postgres!.image!, /^postgres:\d+/);
  for (const [service, role] of [
    [api!, 'api'],
    [worker!, 'worker'],
  ] as const) {
    assert.deepEqual(service.command?.slice(-3), ['serve', '--role', role]);
    assert.equal(service.image, 'plaza:local');
    assert.equal(service.init, true);
    assert.match(service.environment!.DATABASE_URL!, /@postgres:5432\//);
    const grace = Number(/^(\d+)s$/.exec(service.stop_grace_period!)![1]) * 1000;
    assert.ok(grace > Number(describeConfig().find((setting) => setting.name === 'SHUTDOWN_TIMEOUT_MS')!.default), 'the drain fits in the grace period');
  }
  assert.equal(worker!.healthcheck?.disable, true, 'a worker has no HTTP port to probe');
});

test('systemd unit: runs the built CLI, stops with SIGTERM after the drain, keeps DATA_DIR private', () => {
  const unit = read('deploy/plaza.service');
  const setting = (name: string) => new RegExp(`^${name}=(.*)$`, 'm').exec(unit)?.[1];
  assert.match(setting('ExecStart')!, /^\/usr\/bin\/node .*\/bin\/plaza\.js serve$/);
  assert.equal(setting('KillSignal'), 'SIGTERM');
  assert.ok(Number(setting('TimeoutStopSec')) * 1000 > Number(describeConfig().find((s) => s.name === 'SHUTDOWN_TIMEOUT_MS')!.default));
  assert.equal(setting('StateDirectoryMode'), '0700');
  assert.match(setting('Environment')!, /DATA_DIR=\/var\/lib\/plaza/);
  assert.equal(setting('User'), 'plaza');
});
