import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { signNotification, verifyNotification, WebhookVerificationError } from '../src/index.js';

const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;
const body = JSON.stringify({ seller_id: 42, topic_path: 'order/meli/status_changed/entered_APRO', entity_id: 'ORD-1', payload: {} });
const now = Date.UTC(2026, 4, 1, 12);
const seconds = now / 1000;

const failure = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    if (error instanceof WebhookVerificationError) return error.reason;
    throw error;
  }
  return 'verified';
};

test('agrees with the standardwebhooks package: what one signs the other verifies, and a change of one byte fails both', () => {
  const secret = newSecret();
  const date = new Date(now);
  const signature = new Webhook(secret).sign('msg_1', date, body);
  const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(seconds), 'webhook-signature': signature };
  assert.deepEqual(verifyNotification({ secret, headers, body, now }).payload, JSON.parse(body));
  const ours = signNotification(secret, 'msg_1', seconds, body);
  assert.equal(ours['webhook-signature'], signature);
  assert.equal(failure(() => verifyNotification({ secret, headers, body: body.replace('ORD-1', 'ORD-2'), now })), 'no_matching_signature');
  assert.throws(() => new Webhook(secret).verify(body.replace('ORD-1', 'ORD-2'), headers));
});

test('the timestamp window: 5 minutes either way by default, or the tolerance given', () => {
  const secret = newSecret();
  const at = (offset: number) => signNotification(secret, 'msg_1', seconds + offset, body);
  assert.equal(failure(() => verifyNotification({ secret, headers: at(-300), body, now })), 'verified');
  assert.equal(failure(() => verifyNotification({ secret, headers: at(-301), body, now })), 'timestamp_too_old');
  assert.equal(failure(() => verifyNotification({ secret, headers: at(301), body, now })), 'timestamp_too_new');
  assert.equal(failure(() => verifyNotification({ secret, headers: at(-600), body, now, toleranceSeconds: 900 })), 'verified');
  assert.equal(failure(() => verifyNotification({ secret, headers: { ...at(0), 'webhook-timestamp': 'soon' }, body, now })), 'timestamp_too_old');
  assert.equal(failure(() => verifyNotification({ secret, headers: { 'webhook-id': 'msg_1' }, body, now })), 'missing_headers');
});

test('during a rotation: two signatures in the header, and either of two secrets on the receiver verifies', () => {
  const [previous, current, other] = [newSecret(), newSecret(), newSecret()];
  const both = `${signNotification(current, 'msg_1', seconds, body)['webhook-signature']} ${signNotification(previous, 'msg_1', seconds, body)['webhook-signature']}`;
  const headers = new Headers({ 'webhook-id': 'msg_1', 'webhook-timestamp': String(seconds), 'webhook-signature': both });
  assert.equal(failure(() => verifyNotification({ secret: previous, headers, body, now })), 'verified');
  assert.equal(failure(() => verifyNotification({ secret: current, headers, body, now })), 'verified');
  assert.equal(failure(() => verifyNotification({ secret: other, headers, body, now })), 'no_matching_signature');
  // A receiver that already switched, given a notification signed with the previous secret only.
  const old = signNotification(previous, 'msg_1', seconds, body);
  assert.equal(failure(() => verifyNotification({ secret: [current, previous], headers: old, body, now })), 'verified');
  assert.equal(failure(() => verifyNotification({ secret: [current, other], headers: old, body: Buffer.from(body), now })), 'no_matching_signature');
});
