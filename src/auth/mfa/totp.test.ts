import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MFA_CODE_MAX_LENGTH, MFA_CODE_MIN_LENGTH } from './mfa-fields.js';
import { base32Decode, base32Encode, hotp, isTotpCode, matchTotp, newTotpSecret, otpauthUrl, totpAt } from './totp.js';
import { newRecoveryCode, normalizeRecoveryCode } from './recovery-codes.js';

describe('TOTP (RFC 6238)', () => {
  // RFC 6238 appendix B: the SHA-1 seed, 8 digits, 30 s steps.
  const seed = Buffer.from('12345678901234567890', 'ascii');
  const vectors: [number, string][] = [
    [59, '94287082'],
    [1111111109, '07081804'],
    [1111111111, '14050471'],
    [1234567890, '89005924'],
    [2000000000, '69279037'],
    [20000000000, '65353130'],
  ];

  test('the RFC\'s test vectors', () => {
    for (const [seconds, code] of vectors) assert.equal(hotp(seed, Math.floor(seconds / 30), 8), code, `T=${seconds}`);
  });

  test('RFC 4226 appendix D: HOTP of counters 0 and 9', () => {
    assert.equal(hotp(seed, 0), '755224');
    assert.equal(hotp(seed, 9), '520489');
  });

  test('base32 round trip, and the RFC seed as apps would be given it', () => {
    assert.equal(base32Encode(seed), 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ');
    assert.deepEqual(base32Decode('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ'), seed);
  });

  test('a code is accepted one step either side, not two, and only after the last used step', () => {
    const secret = base32Encode(seed);
    const at = new Date(1_111_111_111_000);
    const step = Math.floor(1_111_111_111 / 30);
    assert.equal(matchTotp(secret, totpAt(secret, at), at, null), step);
    assert.equal(matchTotp(secret, totpAt(secret, new Date(at.getTime() - 30_000)), at, null), step - 1);
    assert.equal(matchTotp(secret, totpAt(secret, new Date(at.getTime() + 30_000)), at, null), step + 1);
    assert.equal(matchTotp(secret, totpAt(secret, new Date(at.getTime() - 60_000)), at, null), undefined);
    assert.equal(matchTotp(secret, totpAt(secret, at), at, step), undefined, 'the step already used');
    assert.equal(matchTotp(secret, 'abcdef', at, null), undefined);
  });

  test('the otpauth URL carries the secret, issuer and parameters', () => {
    const url = new URL(otpauthUrl('Plaza', 'alice@example', 'ABC'));
    assert.equal(url.protocol, 'otpauth:');
    assert.equal(url.searchParams.get('secret'), 'ABC');
    assert.equal(url.searchParams.get('issuer'), 'Plaza');
    assert.equal(url.searchParams.get('digits'), '6');
    assert.equal(url.host, 'totp');
    assert.equal(decodeURIComponent(url.pathname), '/Plaza:alice@example');
  });

  test('recovery codes: typed in any case, with or without dashes', () => {
    const code = newRecoveryCode();
    assert.match(code, /^[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}$/);
    assert.equal(normalizeRecoveryCode(code.toLowerCase().replaceAll('-', ' ')), code.replaceAll('-', ''));
    assert.equal(normalizeRecoveryCode('short'), undefined);
  });

  // Issue 35: the six digits were written again as /^\d{6}$/ in totp.ts and second-factor-code.ts, and as a schema's 6.
  test('a code has the form the apps make, for matching, for the choice of TOTP over recovery code, and within the fields\' bounds', () => {
    const secret = newTotpSecret();
    for (let minute = 0; minute < 60; minute++) {
      const code = totpAt(secret, new Date(Date.UTC(2026, 0, 1, 0, minute)));
      assert.equal(isTotpCode(code), true, code);
      assert.ok(code.length >= MFA_CODE_MIN_LENGTH && code.length <= MFA_CODE_MAX_LENGTH);
    }
    for (const text of ['12345', '1234567', '12345a', ' 123456', '１２３４５６']) assert.equal(isTotpCode(text), false, text);
  });
});
