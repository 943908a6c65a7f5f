import assert from 'node:assert/strict';
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

  test('accounts are not stored in clear', () => {
    assert.notEqual(accountKeyOf('name:alice'), accountKeyOf('name:alice2'));
    assert.ok(!accountKeyOf('name:alice').includes('alice'));
  });

  test('the three keys of an attempt are distinct, and an account never yields an IP key', () => {
    const keys = attemptKeys('name:192.0.2.1', '192.0.2.1');
    assert.equal(new Set([keys.pair, keys.user, keys.ip]).size, 3);
    assert.ok(keys.ip.startsWith('ip:') && keys.user.startsWith('u:') && keys.pair.startsWith('uip:'));
    assert.notEqual(attemptKeys('x', '192.0.2.1').user, keys.ip);
  });
});
