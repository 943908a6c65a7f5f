import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { nextRetryDelay, parseRetryAfter, parseRetrySchedule } from './retry-schedule.js';
import { signatureHeader } from './signature.js';
import { Webhook } from 'standardwebhooks';

describe('retry schedule', () => {
  test('the default schedule parses to the documented delays', () => {
    assert.deepEqual(parseRetrySchedule('5s,30s,2m,10m,30m,1h,3h,6h,12h,24h'), [5e3, 30e3, 120e3, 600e3, 1800e3, 3600e3, 10800e3, 21600e3, 43200e3, 86400e3]);
    assert.deepEqual(parseRetrySchedule(' 250ms , 1d '), [250, 86_400_000]);
    assert.throws(() => parseRetrySchedule('5s,soon'), /"soon"/);
  });

  test('each delay stays within ±jitter of the schedule, and the schedule ends', () => {
    const schedule = parseRetrySchedule('5s,30s,2m');
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3 }), fc.double({ min: 0, max: 0.9999, noNaN: true }), (attempt, random) => {
        const delay = nextRetryDelay(schedule, attempt, 0.2, () => random)!;
        const base = schedule[attempt - 1]!;
        return delay >= base * 0.8 - 1 && delay <= base * 1.2 + 1;
      }),
    );
    assert.equal(nextRetryDelay(schedule, 4, 0.2), undefined);
    assert.equal(nextRetryDelay(schedule, 1, 0), 5000);
  });

  test('Retry-After: seconds, HTTP date, bounded, or ignored when unreadable', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    assert.equal(parseRetryAfter('120', now, 3600), 120_000);
    assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:10:00 GMT', now, 3600), 600_000);
    assert.equal(parseRetryAfter('Wed, 31 Dec 2025 00:00:00 GMT', now, 3600), 0);
    assert.equal(parseRetryAfter('99999', now, 3600), 3_600_000);
    assert.equal(parseRetryAfter('soon', now, 3600), undefined);
    assert.equal(parseRetryAfter(undefined, now, 3600), undefined);
    assert.equal(parseRetryAfter('-5', now, 3600), undefined);
  });
});

describe('Standard Webhooks signature', () => {
  test('matches the reference library for any id, time and body', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 16, maxLength: 32 }), fc.string({ minLength: 1 }), fc.integer({ min: 0, max: 2 ** 31 }), fc.string(), (key, id, seconds, body) => {
        const secret = `whsec_${Buffer.from(key).toString('base64')}`;
        const ours = signatureHeader([Buffer.from(key)], id, seconds, body);
        return ours === new Webhook(secret).sign(id, new Date(seconds * 1000), body);
      }),
    );
  });
});
