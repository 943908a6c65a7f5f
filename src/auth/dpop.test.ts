import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { projectRoot } from '../paths.js';
import { seedUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';

/** The example of docs/authentication.md, as written there. */
function documentedExample(): string {
  const text = readFileSync(join(projectRoot, 'docs', 'authentication.md'), 'utf8');
  const start = text.indexOf('**Example** (Node.js, with jose)');
  assert.ok(start > 0, 'the DPoP example is in docs/authentication.md');
  const block = /```js\n([\s\S]*?)```/.exec(text.slice(start));
  assert.ok(block, 'the example has a js code block');
  return block[1]!;
}

function run(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}: ${out}`))));
  });
}

describe('DPoP: the documented client', () => {
  let ctx: TestContext;
  let base: string;
  // Inside the project, so that the example's `import 'jose'` resolves as in a client's project.
  const file = join(projectRoot, 'dist', `dpop-example-${process.pid}.mjs`);
  before(async () => {
    // The example takes iat from the wall clock, as a client does.
    ctx = await createTestApp();
    base = await ctx.app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(async () => {
    rmSync(file, { force: true });
    await ctx.close();
  });

  test('logs in with a proof, reads products with a bound token and refreshes, as docs/authentication.md shows', async () => {
    const user = await seedUser(ctx.db);
    const code = documentedExample()
      .replace("'https://plaza.example.com'", JSON.stringify(base))
      .replace("'acme-api'", JSON.stringify(user.username))
      .replace("'…'", JSON.stringify(user.password));
    writeFileSync(file, `${code}\nconsole.log(JSON.stringify({ token_type, products: products.status, next: next.status, nextType: (await next.json()).token_type }));\n`);
    const result = JSON.parse((await run(file)).trim().split('\n').at(-1)!) as Record<string, unknown>;
    assert.deepEqual(result, { token_type: 'DPoP', products: 200, next: 200, nextType: 'DPoP' });
  });
});
