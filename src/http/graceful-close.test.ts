import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { test } from 'node:test';
import { createTestApp } from '../testing/test-app.js';

test('closing the server: a keep-alive connection busy at that moment gets its answer with Connection: close and holds nothing up', async () => {
  const ctx = await createTestApp();
  await ctx.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = ctx.app.server.address() as { port: number };
  const body = JSON.stringify({ username: 'nobody', password: 'not this one' });
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  let answer = '';
  socket.on('data', (chunk) => (answer += String(chunk)));
  // Headers and half the body before the close, the rest after it: the request is in flight.
  socket.write(`POST /api/v2/auth/login HTTP/1.1\r\nhost: x\r\nconnection: keep-alive\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 10)}`);
  await new Promise((resolve) => setTimeout(resolve, 100));
  const started = Date.now();
  const closed = ctx.app.close();
  socket.write(body.slice(10));
  const ended = once(socket, 'end');
  await closed;
  assert.ok(Date.now() - started < 5000, `closed after ${Date.now() - started} ms while the client kept its connection open`);
  await ended;
  assert.match(answer, /^HTTP\/1\.1 401/);
  assert.match(answer, /\r\nconnection: close\r\n/i);
  socket.destroy();
  await ctx.close();
});
