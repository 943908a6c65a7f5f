import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { closed, exited, untilOutput } from './child-process.js';

// A wait that never ends fails here in seconds, not at the runner's timeout.
async function within<T>(promise: Promise<T>): Promise<T> {
  const ac = new AbortController();
  const timeout = delay(5_000, undefined, { signal: ac.signal }).then(
    () => assert.fail('still waiting 5 s after the child had exited'),
    () => undefined as never,
  );
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    ac.abort();
  }
}

const quickChild = (script: string) => spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });

test('exited() and closed() resolve for a child whose exit was already seen', async () => {
  const child = quickChild('process.exitCode = 3');
  await once(child, 'close');
  assert.deepEqual(await within(exited(child)), { code: 3, signal: null });
  assert.deepEqual(await within(closed(child)), { code: 3, signal: null });
});

test('exited() of a killed child gives its signal, also when asked after the fact', async () => {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  child.kill('SIGKILL');
  assert.deepEqual(await within(exited(child)), { code: null, signal: 'SIGKILL' });
  assert.deepEqual(await within(exited(child)), { code: null, signal: 'SIGKILL' });
});

test('closed() waits for the output written before exit', async () => {
  const child = quickChild('process.stdout.write("x".repeat(1 << 20))');
  let out = 0;
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.length));
  await within(closed(child));
  assert.equal(out, 1 << 20);
});

test('untilOutput() returns false, without hanging, when the child exits before the awaited line', async () => {
  const child = quickChild('console.log("starting"); process.exit(1)');
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk));
  assert.equal(await within(untilOutput(child, child.stdout, () => out.includes('started'))), false);
  assert.equal(await within(untilOutput(child, child.stdout, () => out.includes('started'))), false, 'also asked again after the exit');
  assert.equal(out, 'starting\n');
});

test('untilOutput() returns true as soon as the line is there', async () => {
  const child = spawn(process.execPath, ['-e', 'console.log("ready"); setInterval(() => {}, 1000)'], { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk));
  try {
    assert.equal(await within(untilOutput(child, child.stdout, () => out.includes('ready'))), true);
  } finally {
    child.kill('SIGKILL');
    await within(exited(child));
  }
});
