import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { projectRoot } from '../../src/paths.js';

// package.json's `files` lists what is published by exclusion (tests and src/testing/): a test
// helper put beside the code would ship unless this holds the line (npm run lint fails on one too).

test('the npm package holds no test, test kit or fixture', () => {
  const output = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: projectRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const [pack] = JSON.parse(output) as { files: { path: string }[] }[];
  const paths = pack!.files.map((file) => file.path);
  assert.ok(paths.includes('dist/src/main.js'), 'the package holds the compiled code');
  // The webhooks' "send a test notification" feature (delivery/test-notification.*) is product code.
  const testish = paths.filter((path) => /test|kit|fixtures/i.test(path.replace(/(^|\/)test-notification\./, '$1')));
  assert.deepEqual(testish, []);
});

test("the Node types are those of the oldest supported Node line, so no newer API type-checks", () => {
  const pkg = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { engines: { node: string }; devDependencies: Record<string, string> };
  const oldest = /^\^?(\d+)\./.exec(pkg.engines.node)![1];
  assert.match(pkg.devDependencies['@types/node']!, new RegExp(`^\\^${oldest}\\.`));
  const installed = JSON.parse(readFileSync(join(projectRoot, 'node_modules/@types/node/package.json'), 'utf8')) as { version: string };
  assert.equal(installed.version.split('.')[0], oldest);
});
