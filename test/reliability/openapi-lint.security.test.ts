import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';
import { createFreshDatabase, type FreshDatabase } from '../../src/testing/fresh-database.js';
import { call, report } from '../../src/testing/plaza-api.js';
import { killAllPlaza, sharedKeyEnv, startPlaza } from '../../src/testing/plaza-process.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const REDOCLY = join(ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
const dir = mkdtempSync(join(tmpdir(), 'plaza-rel-openapi-'));
let database: FreshDatabase | undefined;
after(async () => {
  await killAllPlaza();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

test('the served OpenAPI document passes `redocly lint` with no errors', { timeout: 120_000 }, async () => {
  assert.ok(existsSync(REDOCLY), '@redocly/cli is a dev dependency (npm ci installs it)');
  database = await createFreshDatabase();
  const plaza = await startPlaza({ DATABASE_URL: database.url, ...sharedKeyEnv() }, { role: 'api' });
  const document = await call(plaza.url, 'GET', '/openapi.json');
  assert.equal(document.status, 200);
  const file = join(dir, 'openapi.json');
  writeFileSync(file, document.text);
  // Offline: no telemetry, no update check; the built-in "recommended-strict" rules (warnings are errors).
  const result = spawnSync(process.execPath, [REDOCLY, 'lint', file, '--extends', 'recommended-strict', '--format', 'json'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: dir, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', CI: 'true' },
    timeout: 90_000,
    maxBuffer: 32 * 1024 * 1024,
  });
  const output = JSON.parse(result.stdout.slice(result.stdout.indexOf('{'))) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; severity: string; message: string }[] };
  const errors = output.problems.filter((p) => p.severity === 'error');
  assert.deepEqual(errors.map((p) => `${p.ruleId}: ${p.message}`), [], 'no lint errors');
  assert.equal(result.status, 0, result.stderr);
  const operations = Object.values((JSON.parse(document.text) as { paths: Record<string, object> }).paths).reduce((n, ops) => n + Object.keys(ops).length, 0);
  report('OpenAPI lint', { operations, errors: output.totals.errors, warnings: output.totals.warnings });
});
