import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { findInexactNumber, isExactNumber } from './exact-numbers.js';
import { insertWebhook, sampleEvent, seedWorld, type World } from '../testing/events.js';

describe('numbers in event payloads are kept exactly or refused', () => {
  test('which numbers survive a double', () => {
    for (const text of ['0', '-0', '1', '1.0', '1E2', '0.1', '-12.50', '9007199254740991', '1e21', '5e-324', '1.7976931348623157e308']) {
      assert.ok(isExactNumber(text), text);
    }
    for (const text of ['12345678901234567891', '9007199254740993', '1e400', '-1e400', '1e-400', '0.10000000000000000001']) {
      assert.equal(isExactNumber(text), false, text);
    }
  });

  test('the path of the first inexact number, through objects, arrays and tricky strings', () => {
    assert.deepEqual(findInexactNumber('{"a":"1e400 \\" 9007199254740993","b":[1,2,{"c":9007199254740993}]}'), { path: 'b.2.c', number: '9007199254740993' });
    assert.deepEqual(findInexactNumber('{"x":{"y":1e400}}'), { path: 'x.y', number: '1e400' });
    assert.equal(findInexactNumber('{"id":"9007199254740993","uuid":"0e4f1","n":123456789012345}'), undefined);
    assert.deepEqual(findInexactNumber('12345678901234567891'), { path: '', number: '12345678901234567891' });
  });

  test('any JSON built from safe numbers passes; one unsafe integer is found where it is', () => {
    // The rule, computed another way: the shortest decimal that reads back as the integer's double
    // (what a double parser writes back) has the integer's value. True for a double's exact value
    // (an even big integer), and also for one like 108023233195651600000, whose double is …596288
    // but is written back as …600000: the same text, so it passes (as 0.1 does).
    const survives = (big: bigint) => {
      const [mantissa, exponent] = Number(big).toExponential().split('e') as [string, string];
      const digits = mantissa.replace('.', '');
      return BigInt(digits) * 10n ** BigInt(Number(exponent) - (digits.length - 1)) === big;
    };
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), fc.bigInt({ min: 2n ** 53n + 1n, max: 2n ** 70n }), (value, big) => {
        const text = JSON.stringify(value);
        if (findInexactNumber(text) !== undefined) return false;
        const found = findInexactNumber(`{"wrapper":[${text},{"big":${big}}]}`);
        return survives(big) ? found === undefined : found?.path === 'wrapper.1.big';
      }),
      { numRuns: 300 },
    );
    // The counterexample that the first form of this test's oracle (a double's exact value) refused.
    assert.equal(findInexactNumber('{"big":108023233195651600000}'), undefined);
    assert.deepEqual(findInexactNumber('{"big":108023233195651596289}'), { path: 'big', number: '108023233195651596289' });
  });

  describe('POST /v1/{mkt}/events', () => {
    let ctx: TestContext;
    let world: World;
    before(async () => {
      ctx = await createTestApp();
      world = await seedWorld(ctx);
      // A subscriber, so that accepted events keep the body checked below.
      await insertWebhook(ctx.db, { topic: 'publication/update' });
    });
    after(() => ctx.close());

    const post = (text: string, headers: Record<string, string> = world.headers.seller1) =>
      ctx.app.inject({ method: 'POST', url: '/v1/MKT/events', headers: { ...headers, 'content-type': 'application/json' }, payload: text });
    const withAuthor = (author: string) => JSON.stringify(sampleEvent('publication/update', world, { author: '@@' })).replace('"@@"', author);

    for (const [number, description] of [['12345678901234567891', 'a 20-digit integer'], ['9007199254740993', '2^53 + 1'], ['1e400', 'an overflowing exponent']]) {
      test(`${description} is refused with 400 naming the field`, async () => {
        const text = JSON.stringify(sampleEvent('publication/update', world)).replace('"publication":{', `"publication":{"price":${number},`);
        const response = await post(text);
        assert.equal(response.statusCode, 400, response.body);
        assert.equal(response.json().code, 'validation_failed');
        assert.equal(response.json().errors[0].field, 'body.publication.price');
        assert.match(response.json().errors[0].message, new RegExp(number!));
      });
    }

    test('exactly representable numbers pass and reach the stored notification with their value', async () => {
      const text = JSON.stringify(sampleEvent('publication/update', world)).replace('"publication":{', '"publication":{"price":12.5,"big":9007199254740991,"tiny":1E-7,');
      const response = await post(text);
      assert.equal(response.statusCode, 202, response.body);
      const { rows } = await ctx.db.query<{ body: unknown }>(`SELECT body FROM events WHERE event_id = $1`, [response.json().event_id]);
      const stored = JSON.stringify(rows[0]!.body);
      assert.match(stored, /"price":12\.5/);
      assert.match(stored, /"big":9007199254740991/);
    });

    test('an anonymous caller gets 401, not the number rule', async () => {
      const response = await post(withAuthor('1e400'), {});
      assert.equal(response.statusCode, 401);
    });
  });
});
