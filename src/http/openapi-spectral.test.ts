import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { projectRoot } from '../paths.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';

// Spectral is the other common OpenAPI linter (Redocly's check is in openapi-contract.test.ts):
// clients and gateways run one or the other on the document we serve.
const SPECTRAL = join(projectRoot, 'node_modules', '@stoplight', 'spectral-cli', 'dist', 'index.js');
const RULESET = join(projectRoot, '.spectral.yaml');

let ctx: TestContext;
const dir = mkdtempSync(join(tmpdir(), 'plaza-spectral-'));
before(async () => {
  ctx = await createTestApp();
});
after(async () => {
  await ctx.close();
  rmSync(dir, { recursive: true, force: true });
});

test('the served OpenAPI document passes Spectral with spectral:oas (.spectral.yaml): 0 errors', async () => {
  const file = join(dir, 'openapi.json');
  writeFileSync(file, (await ctx.app.inject({ url: '/openapi.json' })).body);
  const result = spawnSync(process.execPath, [SPECTRAL, 'lint', file, '--ruleset', RULESET, '--format', 'json', '--fail-severity', 'error', '--quiet'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: dir },
    timeout: 90_000,
    maxBuffer: 32 * 1024 * 1024,
  });
  const problems = JSON.parse(result.stdout.slice(result.stdout.indexOf('['))) as { code: string; message: string; severity: number; path: string[] }[];
  // Severity 0 is an error. Warnings (operation descriptions, a contact) are not contract faults.
  assert.deepEqual(problems.filter((p) => p.severity === 0).map((p) => `${p.code}: ${p.message} at ${p.path.join('.')}`), []);
  assert.equal(result.status, 0, `${result.stdout}\n${result.stderr}`);
});
