import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadConfig } from '../config.js';
import { attemptKeys, ipKeyOf, userKeyOf } from './login-limit-keys.js';

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

  test('user names compare case-insensitively and are not stored in clear', () => {
    assert.equal(userKeyOf('Alice'), userKeyOf('aLICE'));
    assert.notEqual(userKeyOf('alice'), userKeyOf('alice2'));
    assert.ok(!userKeyOf('alice').includes('alice'));
  });

  test('the three keys of an attempt are distinct, and a user name never yields an IP key', () => {
    const config = loadConfig({ LOG_LEVEL: 'silent' });
    const keys = attemptKeys(config, '192.0.2.1', '192.0.2.1');
    assert.equal(new Set([keys.pair.key, keys.user.key, keys.ip.key]).size, 3);
    assert.ok(keys.ip.key.startsWith('ip:') && keys.user.key.startsWith('u:') && keys.pair.key.startsWith('uip:'));
    assert.notEqual(attemptKeys(config, 'x', '192.0.2.1').user.key, keys.ip.key);
    assert.deepEqual([keys.pair.threshold, keys.user.threshold, keys.ip.threshold], [3, 10, 50]);
  });
});
