import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Agent } from 'undici';
import { RESPONSE_BODY_LIMIT, sendNotification } from './sender.js';

/** What the receiver does, by path. */
const ROUTES: Record<string, (res: ServerResponse) => void> = {
  '/large': (res) => res.end('x'.repeat(3 * RESPONSE_BODY_LIMIT)),
  '/retry-after': (res) => res.writeHead(503, { 'Retry-After': '120' }).end('busy'),
  '/early-hints': (res) => {
    res.writeEarlyHints({ link: '</x>; rel=preload', 'retry-after': '999' });
    res.writeHead(201).end('made');
  },
  '/hang': () => {},
};

describe('sender: one notification over undici dispatch', () => {
  let server: Server;
  let base: string;
  const agent = new Agent();
  const hanging: ServerResponse[] = [];

  before(async () => {
    server = createServer((req, res) => {
      req.resume();
      if (req.url === '/hang') hanging.push(res);
      req.on('end', () => ROUTES[req.url ?? '']?.(res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    for (const res of hanging) res.destroy();
    await agent.close();
    await new Promise((resolve) => server.close(resolve));
  });

  const send = (path: string, timeoutMs = 2000, signal?: AbortSignal) =>
    sendNotification(agent, { url: `${base}${path}`, messageId: 'msg_1', body: '{"a":1}', keys: [Buffer.from('key')], headers: {}, timestampSeconds: 1 }, timeoutMs, signal);

  test('keeps the first RESPONSE_BODY_LIMIT bytes of a larger answer, and the next send still goes', async () => {
    const result = await send('/large');
    assert.equal(result.statusCode, 200);
    assert.equal(result.responseBody, 'x'.repeat(RESPONSE_BODY_LIMIT));
    assert.equal(result.error, null);
    assert.equal((await send('/retry-after')).statusCode, 503);
  });

  test('reads Retry-After and the answer of a refusal', async () => {
    const result = await send('/retry-after');
    assert.deepEqual([result.statusCode, result.retryAfter, result.responseBody], [503, '120', 'busy']);
    assert.equal(result.requestHeaders?.['webhook-id'], 'msg_1');
  });

  test('an informational answer (103) is not the answer: neither its status nor its headers count', async () => {
    const result = await send('/early-hints');
    assert.deepEqual([result.statusCode, result.retryAfter, result.responseBody], [201, undefined, 'made']);
  });

  test('a receiver that never answers: a timeout after timeoutMs, whatever the connection does', async () => {
    const result = await send('/hang', 300);
    assert.equal(result.statusCode, null);
    assert.equal(result.error, 'timeout after 300 ms');
    assert.ok(result.durationMs >= 290 && result.durationMs < 2000, `${result.durationMs} ms`);
  });

  test('shutdown aborts a send in progress, and one not started yet', async () => {
    const shutdown = new AbortController();
    const pending = send('/hang', 10_000, shutdown.signal);
    setTimeout(() => shutdown.abort(), 100);
    const result = await pending;
    assert.equal(result.error, 'aborted: worker shutting down');
    assert.ok(result.durationMs < 5000);
    assert.equal((await send('/large', 10_000, shutdown.signal)).error, 'aborted: worker shutting down');
  });

  test('no receiver: a connection error with its code, the cause for the log only', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const result = await sendNotification(agent, { url: `http://127.0.0.1:${port}/`, messageId: 'm', body: '{}', keys: [Buffer.from('k')], headers: {}, timestampSeconds: 1 }, 2000);
    assert.equal(result.statusCode, null);
    assert.equal(result.error, 'connection error ECONNREFUSED');
    assert.match(result.detail ?? '', /ECONNREFUSED/);
  });

  test('a URL that is not http(s) is refused before any request', async () => {
    const result = await sendNotification(agent, { url: 'ftp://127.0.0.1/', messageId: 'm', body: '{}', keys: [], headers: {}, timestampSeconds: 1 }, 2000);
    assert.deepEqual([result.statusCode, result.error, result.requestHeaders], [null, 'unsupported URL scheme ftp:', null]);
  });
});
