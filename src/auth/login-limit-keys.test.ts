import assert from 'node:assert/strict';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { accountKeyOf, attemptKeys, ipKeyOf } from './login-limit-keys.js';

describe('login limit keys', () => {
  test('IPv4 stays as is; IPv4-mapped IPv6 becomes the IPv4 address', () => {
    assert.equal(ipKeyOf('192.0.2.1'), '192.0.2.1');
    assert.equal(ipKeyOf('::ffff:192.0.2.1'), '192.0.2.1');
    assert.equal(ipKeyOf('::FFFF:c000:0201'), '192.0.2.1');
  });

  test('IPv6 is counted per /64, whatever the notation', () => {
    assert.equal(ipKeyOf('2001:db8:1:2::1'), '2001:db8:1:2::/64');
    assert.equal(ipKeyOf('2001:0DB8:0001:0002:ffff:ffff:ffff:ffff'), '2001:db8:1:2::/64');
    assert.notEqual(ipKeyOf('2001:db8:1:3::1'), ipKeyOf('2001:db8:1:2::1'));
    assert.equal(ipKeyOf('::1'), '0:0:0:0::/64');
  });

  const key = randomBytes(32);

  test('accounts are not stored in clear, nor as a plain hash a dictionary of guesses reverses', () => {
    assert.notEqual(accountKeyOf('name:alice', key), accountKeyOf('name:alice2', key));
    assert.ok(!accountKeyOf('name:alice', key).includes('alice'));
    // A password typed into the user name field: its plain SHA-256 is no key of the table.
    const typed = 'name:summer2024!';
    assert.notEqual(accountKeyOf(typed, key), createHash('sha256').update(typed).digest('base64url'));
    assert.equal(accountKeyOf(typed, key), createHmac('sha256', key).update(typed).digest('base64url'));
    assert.notEqual(accountKeyOf(typed, key), accountKeyOf(typed, randomBytes(32)), 'another SECRETS_KEY, other keys');
  });

  test('the three keys of an attempt are distinct, and an account never yields an IP key', () => {
    const keys = attemptKeys('name:192.0.2.1', '192.0.2.1', key);
    assert.equal(new Set([keys.pair, keys.user, keys.ip]).size, 3);
    assert.ok(keys.ip.startsWith('ip:') && keys.user.startsWith('u:') && keys.pair.startsWith('uip:'));
    assert.notEqual(attemptKeys('x', '192.0.2.1', key).user, keys.ip);
  });
});
