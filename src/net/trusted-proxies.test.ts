import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../config.js';
import { parseTrustProxy, proxyTrustFunction } from './trusted-proxies.js';

describe('TRUST_PROXY', () => {
  test('empty and 0 trust nobody; a number trusts that many hops', () => {
    assert.deepEqual(parseTrustProxy(''), { hops: 0 });
    assert.deepEqual(parseTrustProxy('0'), { hops: 0 });
    assert.deepEqual(parseTrustProxy('2'), { hops: 2 });
    const twoHops = proxyTrustFunction(parseTrustProxy('2'));
    assert.deepEqual([0, 1, 2].map((hop) => twoHops('198.51.100.1', hop)), [true, true, false]);
  });

  test('a list trusts exactly its addresses and ranges, IPv4-mapped sockets included', () => {
    const trusted = proxyTrustFunction(parseTrustProxy('10.0.0.0/8, 192.0.2.7 ,2001:db8:cafe::/48, ::1'));
    for (const address of ['10.1.2.3', '::ffff:10.9.9.9', '192.0.2.7', '2001:db8:cafe:1::5', '::1']) assert.equal(trusted(address, 0), true, address);
    for (const address of ['11.0.0.1', '192.0.2.8', '2001:db8:caff::1', '127.0.0.1', 'unknown', '']) assert.equal(trusted(address, 0), false, address);
    // Trust follows the address, not the position: a trusted proxy deep in the chain is still trusted.
    assert.equal(trusted('10.0.0.1', 5), true);
  });

  test('a bad entry stops start-up naming TRUST_PROXY', () => {
    for (const value of ['10.0.0.0/33', 'proxy.example', '11', '10.0.0.1,nope']) {
      assert.throws(() => loadConfig({ TRUST_PROXY: value }), (error: unknown) => error instanceof ConfigError && /TRUST_PROXY=/.test(error.message), value);
    }
  });
});
