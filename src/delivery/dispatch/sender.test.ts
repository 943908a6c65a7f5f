import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Agent, type Dispatcher } from 'undici';
import { RESPONSE_BODY_LIMIT, sendNotification } from './sender.js';

/** Resolved when the receiver sees the connection of /endless closed. */
let endlessClosed: () => void = () => {};
const endlessClosedPromise = new Promise<void>((resolve) => (endlessClosed = resolve));

/** What the receiver does, by path. */
const ROUTES: Record<string, (res: ServerResponse) => void> = {
  '/large': (res) => res.end('x'.repeat(3 * RESPONSE_BODY_LIMIT)),
  '/retry-after': (res) => res.writeHead(503, { 'Retry-After': '120' }).end('busy'),
  '/early-hints': (res) => {
    res.writeEarlyHints({ link: '</x>; rel=preload', 'retry-after': '999' });
    res.writeHead(201).end('made');
  },
  '/hang': () => {},
  // A status at once, then a body that trickles and never ends.
  '/trickle': (res) => {
    res.writeHead(200);
    res.write('accepted');
  },
  // A status, then the connection broken off mid-body.
  '/cut': (res) => {
    res.writeHead(202, { 'content-length': '100' });
    res.write('part');
    setTimeout(() => res.destroy(), 20);
  },
  // The first part of an answer that never ends.
  '/endless': (res) => {
    res.on('close', () => endlessClosed());
    res.writeHead(200);
    res.write('y'.repeat(2 * RESPONSE_BODY_LIMIT));
  },
};

describe('sender: one notification over undici dispatch', () => {
  let server: Server;
  let base: string;
  const agent = new Agent();
  const hanging: ServerResponse[] = [];
  let connections = 0;

  before(async () => {
    server = createServer((req, res) => {
      req.resume();
      if (req.url === '/hang' || req.url === '/endless' || req.url === '/trickle') hanging.push(res);
      req.on('end', () => ROUTES[req.url ?? '']?.(res));
    });
    server.on('connection', () => (connections += 1));
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

  test('keeps the first RESPONSE_BODY_LIMIT bytes of a larger answer, on a connection it keeps using', async () => {
    const before = connections;
    for (let i = 0; i < 5; i++) {
      const result = await send('/large');
      assert.deepEqual([result.statusCode, result.error, result.responseBody], [200, null, 'x'.repeat(RESPONSE_BODY_LIMIT)]);
    }
    assert.equal((await send('/retry-after')).statusCode, 503);
    // An answer that arrives whole in one read is not aborted, so its connection is used again (the
    // first, on a new connection, may come in two). Aborting every one cost two connections a send.
    assert.ok(connections - before <= 2, `${connections - before} connections for 6 sends`);
  });

  // No timing: with a timeout far beyond the test's own, only the cut can end the send and close
  // the connection of an answer that never ends; without it, the test times out.
  test('a longer answer than one read is cut off at the prefix, not read to its end', { timeout: 30_000 }, async () => {
    const result = await send('/endless', 10 * 60_000);
    assert.deepEqual([result.statusCode, result.error, result.responseBody], [200, null, 'y'.repeat(RESPONSE_BODY_LIMIT)]);
    // And the request is aborted: the receiver sees its connection closed.
    await endlessClosedPromise;
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
    // Our own stop: nothing for the log (a detail is logged as a receiver's failure).
    assert.equal(result.detail, undefined);
    assert.ok(Number.isInteger(result.durationMs) && result.durationMs >= 0, `${result.durationMs} ms`);
  });

  test('a status within the timeout is the answer, even when its body then trickles or breaks off', async () => {
    // The body never ends: only the timeout can settle this send, and it keeps the status.
    const trickled = await send('/trickle', 300);
    assert.deepEqual([trickled.statusCode, trickled.error, trickled.responseBody], [200, null, 'accepted']);
    const cut = await send('/cut');
    assert.deepEqual([cut.statusCode, cut.error, cut.responseBody], [202, null, 'part']);
  });

  test('shutdown aborts a send in progress, and one not started yet', async () => {
    const shutdown = new AbortController();
    // Aborted once the receiver holds the request, not after a guessed delay. The error names the
    // shutdown, not the timeout: the abort ended it.
    const received = once(server, 'request');
    const pending = send('/hang', 10 * 60_000, shutdown.signal);
    await received;
    shutdown.abort();
    const result = await pending;
    assert.equal(result.error, 'aborted: worker shutting down');
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

  test('an answer that is not HTTP says so, and the next send goes', async () => {
    const answers = [
      'HTTP/1.1 101 Switching Protocols\r\n\r\n',
      'HTTP/1.1 2x0 OK\r\n\r\n',
      // The status came: it is the answer, whatever the framing of the body behind it.
      'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nZZ\r\nxx\r\n0\r\n\r\n',
    ];
    const raw = createTcpServer((socket) => socket.once('data', () => socket.end(answers.shift() ?? '')));
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(raw.address() as AddressInfo).port}/`;
    try {
      const sendRaw = () => sendNotification(agent, { url, messageId: 'm', body: '{}', keys: [Buffer.from('k')], headers: {}, timestampSeconds: 1 }, 2000);
      assert.equal((await sendRaw()).error, 'invalid response from the receiver', 'a 101 without Upgrade');
      assert.match((await sendRaw()).error ?? '', /^Response does not match the HTTP\/1.1 protocol/, 'a status that is not a number');
      assert.equal((await sendRaw()).statusCode, 200, 'a chunk size that is not hexadecimal, after a 200');
      assert.equal((await send('/retry-after')).statusCode, 503);
    } finally {
      await new Promise((resolve) => raw.close(resolve));
    }
  });

  test('an error of our own building the request rejects, it does not throw', async () => {
    const sent = sendNotification(agent, { url: `${base}/large`, messageId: 'm', body: '{}', keys: [], headers: null as unknown as Record<string, string>, timestampSeconds: 1 }, 2000);
    await assert.rejects(sent, TypeError);
  });

  test('a URL that is not http(s) is refused before any request', async () => {
    const result = await sendNotification(agent, { url: 'ftp://127.0.0.1/', messageId: 'm', body: '{}', keys: [], headers: {}, timestampSeconds: 1 }, 2000);
    assert.deepEqual([result.statusCode, result.error, result.requestHeaders], [null, 'unsupported URL scheme ftp:', null]);
  });
});

test("the handler speaks undici 7's dispatch-handler API, not the deprecated callbacks its next major drops", async () => {
  let handler: Dispatcher.DispatchHandler | undefined;
  // A dispatcher that answers through the documented API only: 204 with two Retry-After headers.
  const dispatcher = {
    dispatch(_options: Dispatcher.DispatchOptions, given: Dispatcher.DispatchHandler) {
      handler = given;
      const controller = { aborted: false, paused: false, reason: null, abort() {}, pause() {}, resume() {} };
      given.onRequestStart!(controller, {});
      given.onResponseStart!(controller, 204, { 'retry-after': ['5', '9'] }, 'No Content');
      given.onResponseData!(controller, Buffer.from('ok'));
      given.onResponseEnd!(controller, {});
      return true;
    },
  } as unknown as Dispatcher;
  const result = await sendNotification(dispatcher, { url: 'http://127.0.0.1:9/h', messageId: 'm', body: '{}', keys: [Buffer.from('k')], headers: {}, timestampSeconds: 1 }, 60_000);
  assert.deepEqual([result.statusCode, result.error, result.retryAfter, result.responseBody], [204, null, '5', 'ok']);
  const legacy = ['onConnect', 'onHeaders', 'onData', 'onComplete', 'onError'].filter((name) => name in handler!);
  assert.deepEqual(legacy, []);
});
