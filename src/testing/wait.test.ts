import assert from 'node:assert/strict';
import { test } from 'node:test';
import { eventually, waitFor } from './wait.js';

test('waitFor() returns once the check holds, sync or async', async () => {
  let asks = 0;
  await waitFor(() => ++asks === 4, { timeoutMs: 5000 });
  assert.equal(asks, 4);
  let asyncAsks = 0;
  await waitFor(async () => ++asyncAsks === 3, { timeoutMs: 5000 });
  assert.equal(asyncAsks, 3);
});

test('waitFor() fails with its message once the time is up, and asks for a lazy message only then', async () => {
  let built = 0;
  const message = () => `state at the end: ${++built}`;
  await waitFor(() => true, { timeoutMs: 50, message });
  assert.equal(built, 0);
  await assert.rejects(waitFor(() => false, { timeoutMs: 50, message }), { message: 'state at the end: 1 (waited 50 ms)' });
  await assert.rejects(waitFor(async () => false, { timeoutMs: 20 }), { message: 'the condition did not hold (waited 20 ms)' });
});

test('eventually() says false when the time is up, after asking once more at the end', async () => {
  let asks = 0;
  assert.equal(await eventually(() => (++asks, false), { timeoutMs: 30 }), false);
  assert.ok(asks >= 2, `asked ${asks} times`);
  assert.equal(await eventually(() => true, { timeoutMs: 0 }), true);
});
