import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { notificationHeaders } from '../delivery/dispatch/sender.js';
import { parseNetworks } from '../net/address-policy.js';
import { checkCallbackUrl, checkCode, checkHeaders, checkName, normalizeSellerId, normalizeTopic } from './webhook-validators.js';

/**
 * The validators against an independent, character-by-character reading of the rules, on inputs
 * drawn both from the grammar (must be accepted) and from arbitrary strings (must agree).
 */
const RUNS = { numRuns: 500 };
const LETTERS_DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const inSet = (set: string) => (text: string) => [...text].every((c) => set.includes(c));
const charsOf = (set: string, minLength: number, maxLength: number) => fc.string({ unit: fc.constantFrom(...set), minLength, maxLength });
const anyText = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.string({ unit: fc.constantFrom(...`${LETTERS_DIGITS}_-/ .*:\r\n\u0000é`) }));

describe('webhook code', () => {
  const rule = (code: string) => code.length >= 1 && code.length <= 100 && inSet(`${LETTERS_DIGITS}_-`)(code);

  test('every code of the grammar is accepted as is', () => {
    fc.assert(fc.property(charsOf(`${LETTERS_DIGITS}_-`, 1, 100), (code) => assert.deepEqual(checkCode(code), { ok: true, value: code })), RUNS);
  });
  test('any string is accepted exactly when the rule allows it', () => {
    fc.assert(fc.property(fc.oneof(anyText, charsOf(`${LETTERS_DIGITS}_-`, 0, 110)), (code) => assert.equal(checkCode(code).ok, rule(code))), RUNS);
  });
});

describe('webhook topic', () => {
  const FIXED = ['publication/create', 'publication/update', 'order/create', 'order/update', 'order/invoice_upload', 'order/status_change'];
  const PREFIX = 'order/status_change/';
  const isStatus = (s: string) => s.length >= 1 && s.length <= 32 && inSet(`${LETTERS_DIGITS}_`)(s);
  const reference = (topic: string): string | undefined => {
    if (FIXED.includes(topic)) return topic;
    if (!topic.startsWith(PREFIX)) return undefined;
    const rest = topic.slice(PREFIX.length);
    // A rest starting with entered_ is the stored form: its code is what follows (never empty).
    const code = rest.startsWith('entered_') ? rest.slice('entered_'.length) : rest;
    return isStatus(code) ? `${PREFIX}entered_${code}` : undefined;
  };
  const status = charsOf(`${LETTERS_DIGITS}_`, 1, 32);
  const grammar = fc.oneof(fc.constantFrom(...FIXED), status.map((s) => PREFIX + s), status.map((s) => `${PREFIX}entered_${s}`));
  const nearMisses = fc.oneof(anyText.map((s) => PREFIX + s), grammar.map((t) => `${t}x-`), grammar.map((t) => t.toUpperCase()), charsOf(`${LETTERS_DIGITS}_`, 33, 40).map((s) => PREFIX + s));

  test('the status-specific form is accepted both ways and normalised to entered_<code>', () => {
    fc.assert(fc.property(status.filter((s) => !s.startsWith('entered_')), (code) => {
      const expected = { ok: true, value: `${PREFIX}entered_${code}` };
      assert.deepEqual(normalizeTopic(PREFIX + code), expected);
      assert.deepEqual(normalizeTopic(`${PREFIX}entered_${code}`), expected);
    }), RUNS);
  });
  test('entered_ with no status code after it is refused, not read as the code "entered_"', () => {
    assert.equal(normalizeTopic(`${PREFIX}entered_`).ok, false);
  });
  test('any string is accepted exactly when the rule allows it, and normalised as the rule says', () => {
    fc.assert(fc.property(fc.oneof(grammar, nearMisses, anyText), (topic) => {
      const checked = normalizeTopic(topic);
      const expected = reference(topic);
      assert.equal(checked.ok, expected !== undefined);
      if (checked.ok) assert.equal(checked.value, expected);
    }), RUNS);
  });
  test('normalising is idempotent', () => {
    fc.assert(fc.property(grammar, (topic) => {
      const once = normalizeTopic(topic);
      assert.ok(once.ok);
      assert.deepEqual(normalizeTopic(once.value), once);
    }), RUNS);
  });
});

describe('webhook headers', () => {
  const TCHAR = `${LETTERS_DIGITS}!#$%&'*+-.^_\`|~`;
  const VALUE_CHARS = '\t' + Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i)).join('');
  const RESERVED = ['host', 'content-length', 'content-type', 'transfer-encoding', 'connection', 'te', 'trailer', 'upgrade', 'keep-alive', 'expect', 'user-agent', 'webhook-id', 'webhook-timestamp', 'webhook-signature'];
  const reference = (headers: Record<string, unknown>): boolean => {
    const entries = Object.entries(headers);
    if (entries.length > 20) return false;
    const lower = entries.map(([name]) => name.toLowerCase());
    if (new Set(lower).size !== lower.length) return false;
    let bytes = 0;
    for (const [name, value] of entries) {
      if (name.length === 0 || !inSet(TCHAR)(name)) return false;
      if (RESERVED.includes(name.toLowerCase()) || name.toLowerCase().startsWith('proxy-') || name.toLowerCase() === '__proto__') return false;
      if (typeof value !== 'string' || !inSet(VALUE_CHARS)(value)) return false;
      bytes += new TextEncoder().encode(name).length + new TextEncoder().encode(value).length;
    }
    return bytes <= 8192;
  };
  const name = fc.oneof(charsOf(TCHAR, 1, 20), fc.constantFrom(...RESERVED, 'Proxy-Authorization', 'HOST', 'X-Api-Key', 'x-api-key', 'Authorization', '__proto__', '__PROTO__'));
  const value = fc.oneof(charsOf(VALUE_CHARS, 0, 40), charsOf(VALUE_CHARS, 500, 1200), anyText);
  const grammar = fc.dictionary(charsOf(TCHAR, 1, 20).filter((n) => reference({ [n]: '' })), charsOf(VALUE_CHARS, 0, 100), { maxKeys: 20 })
    .filter((headers) => reference(headers));

  test('every map of the grammar is accepted unchanged', () => {
    fc.assert(fc.property(grammar, (headers) => assert.deepEqual(checkHeaders(headers), { ok: true, value: headers })), RUNS);
  });
  test('what is accepted is what is sent: no header accepted at create is dropped or replaced at send (the Expect bug)', () => {
    const named = fc.oneof(grammar, fc.constantFrom(...['Expect', 'X-Correlation-Id', 'Cookie', 'X-Forwarded-For', 'Accept', 'Content-Encoding'].map((n) => ({ [n]: 'v' }))));
    fc.assert(fc.property(named, (headers) => {
      const checked = checkHeaders(headers);
      if (!checked.ok) return;
      const sent = notificationHeaders({ url: 'https://r.example.com/h', messageId: 'msg_1', body: '{}', keys: [Buffer.alloc(32)], headers: checked.value, timestampSeconds: 1 });
      for (const [name, value] of Object.entries(checked.value)) assert.equal(sent[name.toLowerCase()], value, name);
    }), RUNS);
  });
  test('any map is accepted exactly when the rules allow it; each refusal names a header or the map', () => {
    const anyMap = fc.oneof(fc.dictionary(fc.oneof(name, anyText), value, { maxKeys: 25 }), fc.dictionary(name, fc.oneof(value, fc.integer(), fc.constant(null)), { maxKeys: 8 }));
    fc.assert(fc.property(anyMap, (headers) => {
      const checked = checkHeaders(headers);
      assert.equal(checked.ok, reference(headers));
      if (!checked.ok) assert.ok(checked.problems.length > 0 && checked.problems.every((p) => p.header === undefined || p.header in headers));
    }), RUNS);
  });
});

describe('webhook seller_id', () => {
  const reference = (value: unknown): string | undefined => {
    if (value === '*') return '*';
    if (typeof value === 'number') return Number.isInteger(value) && value >= 1 && value <= 2 ** 31 - 1 ? String(value) : undefined;
    if (typeof value !== 'string' || value.length === 0 || value[0] === '0' || !inSet('0123456789')(value)) return undefined;
    return BigInt(value) <= 2n ** 31n - 1n ? value : undefined;
  };
  test('"*", a positive seller id as a number or its decimal text; stored as text', () => {
    const candidates = fc.oneof(fc.constant('*'), fc.integer(), fc.double(), fc.bigInt({ min: 0n, max: 2n ** 40n }).map(String), charsOf('0123456789', 0, 12), anyText, fc.boolean(), fc.constant(null));
    fc.assert(fc.property(candidates, (value) => {
      const checked = normalizeSellerId(value);
      const expected = reference(value);
      assert.equal(checked.ok, expected !== undefined, String(value));
      if (checked.ok) assert.equal(checked.value, expected);
    }), RUNS);
  });
});

describe('webhook name', () => {
  const visible = (c: string) => !/^\s$/u.test(c) && !/^\p{Cf}$/u.test(c);
  const reference = (name: string) =>
    name.trim().length > 0 && [...name.trim()].length <= 200 && ![...name.trim()].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f) && [...name].some(visible);
  test('trimmed, 1 to 200 characters, no control characters, one visible at least', () => {
    const names = fc.oneof(anyText, fc.string({ unit: 'grapheme', minLength: 190, maxLength: 210 }), fc.string({ minLength: 1, maxLength: 200 }).map((s) => `  ${s}\n`));
    fc.assert(fc.property(names, (name) => {
      const checked = checkName(name);
      assert.equal(checked.ok, reference(name));
      if (checked.ok) assert.equal(checked.value, name.trim());
    }), RUNS);
    for (const name of ['\u200b', '\u200e\u00a0', '\ufeff \u2060']) assert.equal(checkName(name).ok, false, JSON.stringify(name));
  });
});

describe('webhook callback_url', () => {
  const none = parseNetworks('');
  const dotted = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
  const inRange = (base: string, bits: number) => {
    const start = base.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
    return fc.integer({ min: 0, max: 2 ** (32 - bits) - 1 }).map((offset) => start + offset);
  };
  const blocked = fc.oneof(inRange('0.0.0.0', 8), inRange('10.0.0.0', 8), inRange('127.0.0.0', 8), inRange('169.254.0.0', 16), inRange('172.16.0.0', 12), inRange('192.168.0.0', 16), inRange('100.64.0.0', 10), inRange('224.0.0.0', 4));

  test('an IPv4 address is judged the same in every spelling', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 32 - 1 }), (n) => {
      const verdict = checkCallbackUrl(`http://${dotted(n)}/hook`, none).ok;
      assert.equal(checkCallbackUrl(`http://${n}/hook`, none).ok, verdict);
      assert.equal(checkCallbackUrl(`http://0x${n.toString(16)}/hook`, none).ok, verdict);
      assert.equal(checkCallbackUrl(`https://[::ffff:${dotted(n)}]/hook`, none).ok, verdict);
    }), RUNS);
  });
  test('addresses in loopback, private, link-local, CGNAT, this-network and multicast ranges are refused', () => {
    fc.assert(fc.property(blocked, (n) => assert.equal(checkCallbackUrl(`http://${dotted(n)}:8080/x`, none).ok, false)), RUNS);
  });
  test('an accepted URL is http(s), at most 2048 characters, without credentials, fragment, spaces or controls', () => {
    const part = fc.string({ unit: fc.constantFrom(...'ab1-._~:/?#@[]!$&\'()*+,;=% \t\r\n\u0000é'), maxLength: 30 });
    const urls = fc.oneof(
      fc.tuple(fc.constantFrom('http://', 'https://', 'ftp://', 'HTTP://', '', '//', 'javascript:'), fc.constantFrom('example.com', 'u:p@example.com', '93.184.216.34', '[2606:2800::1]', ''), part).map((p) => p.join('')),
      anyText,
    );
    fc.assert(fc.property(urls, (text) => {
      const checked = checkCallbackUrl(text, none);
      if (!checked.ok) return;
      const url = new URL(text);
      assert.ok(['http:', 'https:'].includes(url.protocol));
      assert.ok(text.length <= 2048 && url.username === '' && url.password === '' && !text.includes('#'));
      // eslint-disable-next-line no-control-regex
      assert.ok(!/[\u0000-\u0020\u007f]/.test(text));
      // The host it goes to is written right after the scheme's //.
      assert.ok(/^[^/\\]/.test(text.slice(url.protocol.length + 2)) && text.slice(url.protocol.length, url.protocol.length + 2) === '//', text);
    }), RUNS);
  });
  test('the host is written where it is read: http:///x, https:example.com and back slashes are refused', () => {
    for (const text of ['http:///x', 'https:example.com', 'http:\\\\example.com\\x', 'http:/example.com/', 'https://\\example.com/']) {
      const checked = checkCallbackUrl(text, none);
      assert.equal(checked.ok, false, text);
    }
    assert.equal(checkCallbackUrl('HTTPS://Example.com:8443/hooks?a=1', none).ok, true);
  });
});
