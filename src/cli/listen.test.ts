import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { ManualClock } from '../clock.js';
import { notificationHeaders } from '../delivery/dispatch/sender.js';
import { projectRoot } from '../paths.js';
import { exited, untilOutput } from '../testing/child-process.js';
import { newWebhookSecret, secretKeyBytes } from '../webhooks/secret-box.js';
import { parseListenOptions, startListener, type Listener } from './listen.js';
import { UsageError } from './usage-error.js';

const secret = newWebhookSecret();
const clock = new ManualClock('2026-03-01T12:00:00Z');
const nowSeconds = () => Math.floor(clock.now().getTime() / 1000);
const body = JSON.stringify({ topic: 'order/status_change', entity_id: 'ORD-1' });

/** What Plaza's worker sends: the same header code as a real delivery. */
function plazaHeaders(key: string, timestampSeconds = nowSeconds()): Record<string, string> {
  return notificationHeaders({ url: '', messageId: 'msg_test_1', body, keys: [secretKeyBytes(key)], headers: {}, timestampSeconds });
}

async function post(port: number, headers: Record<string, string>, payload = body): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${port}/hooks`, { method: 'POST', headers, body: payload });
  await response.arrayBuffer();
  return response.status;
}

describe('plaza listen, in-process', () => {
  const printed: string[] = [];
  let listener: Listener;
  let failing: Listener;

  before(async () => {
    listener = await startListener({ port: 0, host: '127.0.0.1', secret, status: 200 }, (text) => printed.push(text), clock);
    failing = await startListener({ port: 0, host: '127.0.0.1', secret, status: 503 }, (text) => printed.push(text), clock);
  });
  after(async () => {
    await listener.close();
    await failing.close();
  });

  test("prints a notification signed by Plaza's delivery code, verifies it and answers the chosen status", async () => {
    assert.equal(await post(listener.port, plazaHeaders(secret)), 200);
    const output = printed.at(-1)!;
    assert.match(output, /POST \/hooks/);
    assert.match(output, /webhook-id: msg_test_1/);
    assert.match(output, /signature: verified/);
    assert.match(output, /"entity_id": "ORD-1"/, 'the body is printed as indented JSON');
    assert.match(output, /answered 200/);

    assert.equal(await post(failing.port, plazaHeaders(secret)), 503, 'a chosen 5xx, to watch Plaza retry');
    assert.match(printed.at(-1)!, /answered 503/);
  });

  test('verifies a signature made by the standardwebhooks library (the reference implementation)', async () => {
    const signature = new Webhook(secret).sign('msg_ref_1', clock.now(), body);
    const status = await post(listener.port, { 'webhook-id': 'msg_ref_1', 'webhook-timestamp': String(nowSeconds()), 'webhook-signature': signature });
    assert.equal(status, 200);
    assert.match(printed.at(-1)!, /signature: verified/);
  });

  test('says INVALID for another secret, an altered body, a stale timestamp or missing headers', async () => {
    await post(listener.port, plazaHeaders(newWebhookSecret()));
    assert.match(printed.at(-1)!, /signature: INVALID: no signature matches/);

    await post(listener.port, plazaHeaders(secret), body.replace('ORD-1', 'ORD-2'));
    assert.match(printed.at(-1)!, /signature: INVALID: no signature matches/);

    await post(listener.port, plazaHeaders(secret, nowSeconds() - 301));
    assert.match(printed.at(-1)!, /signature: INVALID: signed 301 s ago,/);
    await post(listener.port, plazaHeaders(secret, nowSeconds() + 600));
    assert.match(printed.at(-1)!, /signature: INVALID: signed 600 s in the future,/);

    await post(listener.port, { 'content-type': 'application/json' });
    assert.match(printed.at(-1)!, /signature: INVALID: the webhook-id, webhook-timestamp and webhook-signature headers are required/);
  });

  test('a body that is not JSON is printed as text, with terminal control characters neutralised', async () => {
    await post(listener.port, { 'content-type': 'text/plain' }, 'plain \u001b]0;pwned\u0007 text');
    const output = printed.at(-1)!;
    assert.match(output, /plain \ufffd\]0;pwned\ufffd text/);
    assert.equal(output.includes('\u001b') || output.includes('\u0007'), false);
  });

  test('without --secret the signature is shown as not checked', async () => {
    const lines: string[] = [];
    const unchecked = await startListener({ port: 0, host: '127.0.0.1', status: 200 }, (text) => lines.push(text), clock);
    try {
      assert.equal(await post(unchecked.port, plazaHeaders(secret)), 200);
      assert.match(lines.at(-1)!, /signature: not checked/);
    } finally {
      await unchecked.close();
    }
  });
});

test('listen options: --port is required, --status is a final HTTP status, --secret is a whsec_ secret', () => {
  assert.deepEqual(parseListenOptions(['--port', '47001']), { port: 47001, host: '127.0.0.1', status: 200 });
  assert.deepEqual(parseListenOptions(['--port', '0', '--status', '500', '--secret', secret]), { port: 0, host: '127.0.0.1', status: 500, secret });
  for (const args of [[], ['--port', 'x'], ['--port', '70000'], ['--port', '1', '--status', '99'], ['--port', '1', '--status', '600'], ['--port', '1', '--secret', 'abc'], ['--port', '1', '--bogus']]) {
    assert.throws(() => parseListenOptions(args), UsageError, args.join(' '));
  }
});

test('`plaza listen` as a process: prints its address, verifies a delivery, answers --status, stops on SIGTERM', async () => {
  const child = spawn(process.execPath, [join(projectRoot, 'bin/plaza.js'), 'listen', '--port', '0', '--secret', secret, '--status', '500'], {
    env: { PATH: process.env.PATH ?? '' },
  });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
  try {
    assert.ok(await untilOutput(child, child.stdout, () => /Listening on http:\/\/127\.0\.0\.1:\d+\//.test(stdout)), `listen exited: ${stdout}`);
    const port = Number(/127\.0\.0\.1:(\d+)\//.exec(stdout)![1]);
    // Real time here: the process has its own clock.
    const headers = notificationHeaders({ url: '', messageId: 'msg_proc_1', body, keys: [secretKeyBytes(secret)], headers: {}, timestampSeconds: Math.floor(Date.now() / 1000) });
    assert.equal(await post(port, headers), 500);
    assert.ok(await untilOutput(child, child.stdout, () => stdout.includes('answered 500')), stdout);
    assert.match(stdout, /webhook-id: msg_proc_1/);
    assert.match(stdout, /signature: verified/);
  } finally {
    child.kill('SIGTERM');
  }
  // exited(), not once(child, 'exit'): the child may be gone already (a failed assertion above).
  const { code } = await exited(child);
  assert.equal(code, 0);
});
