import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';

// Found by the hostile review of issue 28: the depth scan (item 7) failed its stream with nobody
// listening whenever Fastify did not read the body, and an unhandled stream 'error' ends the
// process. Anyone could stop the service with one small request: a GET with a nested JSON body
// (Fastify never reads a GET's body), or a body over the route's limit (Fastify answers 413 and
// stops listening) whose bytes past that point are nested. Each case below killed the process.

const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;

/** Sends `chunks` (chunked when `announced` is undefined) and resolves with the status once answered. */
function send(port: number, method: string, path: string, chunks: string[], announced?: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (announced === undefined) headers['transfer-encoding'] = 'chunked';
    else headers['content-length'] = String(announced);
    const req = request({ port, method, path, headers }, (res) => {
      res.resume();
      res.on('end', () => {
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
    });
    req.setTimeout(5000, () => req.destroy(new Error(`${method} ${path}: no answer within 5 s`)));
    req.on('error', (error) => ((error as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve(0) : reject(error)));
    for (const chunk of chunks) req.write(chunk);
    if (announced === undefined || chunks.join('').length >= announced) req.end();
  });
}

describe('a body Fastify does not read never ends the process', () => {
  let ctx: TestContext;
  let port: number;
  // What would end the process outside a test runner (which catches it and blames some hook).
  const uncaught: unknown[] = [];
  const record = (error: unknown) => uncaught.push(error);
  before(async () => {
    process.on('uncaughtException', record);
    ctx = await createTestApp();
    await ctx.app.listen({ host: '127.0.0.1', port: 0 });
    port = (ctx.app.server.address() as AddressInfo).port;
  });
  after(async () => {
    process.off('uncaughtException', record);
    await ctx.close();
  });

  // The process must still be there, and answering, once the stream had time to fail.
  const stillServing = async () => {
    await sleep(200);
    assert.deepEqual(uncaught.splice(0).map(String), []);
    const health = await ctx.app.inject({ method: 'GET', url: '/healthz' });
    assert.equal(health.statusCode, 200);
  };

  test('a GET with a nested JSON body (never read), unauthenticated', async () => {
    const body = nested(100);
    assert.equal(await send(port, 'GET', '/openapi.json', [body], body.length), 200);
    await stillServing();
  });

  test('a body announced over the route\'s limit (413 before reading) that is nested', async () => {
    // Login takes 32 KiB; 40 KiB of brackets are sent all the same.
    const body = '['.repeat(40 * 1024);
    assert.equal(await send(port, 'POST', '/api/v2/auth/login', [body], body.length), 413);
    await stillServing();
  });

  test('a chunked body whose bytes past the route\'s limit are nested', async () => {
    const status = await send(port, 'POST', '/api/v2/auth/login', [`{"username":"${'x'.repeat(33 * 1024)}",`, `"p":${'['.repeat(200)}`]);
    // 413 when the answer comes before the reset, 0 when the server closed first: either way refused.
    assert.ok(status === 413 || status === 0, String(status));
    await stillServing();
  });
});
