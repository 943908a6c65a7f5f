import assert from 'node:assert/strict';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { acceptedEncoding, PrebuiltDocument } from './prebuilt-document.js';

// Issue 28 item 8 (first half): /openapi.json is served from bytes built once.

describe('/openapi.json is built once and served pre-built', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp();
  });
  after(() => ctx.close());

  test('the same bytes every time, at /openapi.json and /docs/json, serialised on the first request only', async () => {
    const stringify = JSON.stringify;
    let documents = 0;
    // Counts the serialisations of the document (the only JSON text of this size an answer here makes).
    JSON.stringify = ((...args: Parameters<typeof JSON.stringify>) => {
      const text = stringify(...args);
      if (typeof text === 'string' && text.length > 100_000) documents++;
      return text;
    }) as typeof JSON.stringify;
    let answers;
    try {
      answers = [];
      // /docs/json too: the documentation page loads the document from there.
      for (const url of ['/openapi.json', '/docs/json', '/openapi.json', '/docs/json']) answers.push(await ctx.app.inject({ url }));
    } finally {
      JSON.stringify = stringify;
    }
    assert.ok(documents <= 1, `serialised ${documents} times`);
    for (const answer of answers) {
      assert.equal(answer.statusCode, 200);
      assert.match(String(answer.headers['content-type']), /^application\/json/);
      assert.deepEqual(answer.rawPayload, answers[0]!.rawPayload);
    }
    assert.deepEqual(answers[0]!.json(), ctx.app.swagger());
  });

  test('gzip and br variants decode to the same bytes; an ETag answers 304', async () => {
    const plain = await ctx.app.inject({ url: '/openapi.json' });
    const gzip = await ctx.app.inject({ url: '/openapi.json', headers: { 'accept-encoding': 'gzip' } });
    const br = await ctx.app.inject({ url: '/openapi.json', headers: { 'accept-encoding': 'gzip, deflate, br' } });
    assert.equal(gzip.headers['content-encoding'], 'gzip');
    assert.equal(br.headers['content-encoding'], 'br');
    assert.deepEqual(gunzipSync(gzip.rawPayload), plain.rawPayload);
    assert.deepEqual(brotliDecompressSync(br.rawPayload), plain.rawPayload);
    assert.ok(br.rawPayload.length < plain.rawPayload.length / 10, `br: ${br.rawPayload.length} of ${plain.rawPayload.length} bytes`);
    for (const answer of [plain, gzip, br]) {
      assert.match(String(answer.headers.vary), /accept-encoding/i);
      assert.equal(answer.headers.etag, plain.headers.etag);
    }
    const again = await ctx.app.inject({ url: '/openapi.json', headers: { 'if-none-match': String(plain.headers.etag) } });
    assert.equal(again.statusCode, 304);
    assert.equal(again.rawPayload.length, 0);
    // A second br answer is the same bytes (computed once).
    assert.deepEqual((await ctx.app.inject({ url: '/openapi.json', headers: { 'accept-encoding': 'br' } })).rawPayload, br.rawPayload);
  });

  test('the document is built once, even for requests that come together', async () => {
    let builds = 0;
    const document = new PrebuiltDocument(() => {
      builds++;
      return { big: 'x'.repeat(10_000) };
    });
    const reply = () => {
      const headers: Record<string, unknown> = {};
      const self = {
        statusCode: 200,
        sent: undefined as unknown,
        header(name: string, value: unknown) { headers[name] = value; return self; },
        type(value: string) { headers['content-type'] = value; return self; },
        code(status: number) { self.statusCode = status; return self; },
        send(body?: unknown) { self.sent = body; return self; },
      };
      return self;
    };
    const replies = await Promise.all(['br', 'gzip', undefined, 'br', 'gzip'].map(async (encoding) => {
      const r = reply();
      await document.send({ headers: encoding ? { 'accept-encoding': encoding } : {} } as never, r as never);
      return r;
    }));
    assert.equal(builds, 1);
    assert.equal(replies[0]!.sent, replies[3]!.sent, 'one br buffer for both');
    assert.equal(replies[1]!.sent, replies[4]!.sent, 'one gzip buffer for both');
  });

  test('Accept-Encoding: br preferred on a tie, q-values and * honoured, q=0 refused', () => {
    assert.equal(acceptedEncoding(undefined), undefined);
    assert.equal(acceptedEncoding('identity'), undefined);
    assert.equal(acceptedEncoding('gzip'), 'gzip');
    assert.equal(acceptedEncoding('gzip, br'), 'br');
    assert.equal(acceptedEncoding('br;q=0.2, gzip;q=0.8'), 'gzip');
    assert.equal(acceptedEncoding('br;q=0, *'), 'gzip');
    assert.equal(acceptedEncoding('*'), 'br');
    assert.equal(acceptedEncoding('*;q=0'), undefined);
    assert.equal(acceptedEncoding('X-GZIP'), 'gzip');
  });
});
