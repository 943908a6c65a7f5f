import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * RFC 6238 TOTP with the parameters every authenticator app uses by default (HMAC-SHA1, 30 s
 * steps, 6 digits), written on node:crypto: a few lines, checked against the RFC's own test
 * vectors (totp.test.ts), where a library would add a dependency for the same few lines.
 */
export const TOTP_STEP_SECONDS = 30;
export const TOTP_DIGITS = 6;
/** Codes of the step before and after the current one are accepted too (clock drift, typing time). */
export const TOTP_WINDOW_STEPS = 1;

const TOTP_CODE = new RegExp(`^\\d{${TOTP_DIGITS}}$`);
/** Whether a text has the form of a code (TOTP_DIGITS digits), before any secret is looked at. */
export const isTotpCode = (code: string): boolean => TOTP_CODE.test(code);

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** A new secret of 20 random bytes (RFC 4226's recommended length), in base32 as apps expect. */
export function newTotpSecret(): string {
  return base32Encode(randomBytes(20));
}

export function base32Encode(bytes: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

export function base32Decode(text: string): Buffer {
  const clean = text.replace(/=+$/, '').toUpperCase();
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const char of clean) {
    const index = BASE32.indexOf(char);
    if (index < 0) throw new Error('not base32');
    value = (value << 5) | index;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** The time step of a moment (RFC 6238 T). */
export const timeStepOf = (at: Date): number => Math.floor(at.getTime() / 1000 / TOTP_STEP_SECONDS);

/** RFC 4226 HOTP of a counter, as a zero-padded decimal string. */
export function hotp(key: Buffer, counter: number, digits = TOTP_DIGITS, algorithm: 'sha1' | 'sha256' | 'sha512' = 'sha1'): string {
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac(algorithm, key).update(message).digest();
  const offset = mac[mac.length - 1]! & 0x0f;
  const binary = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 10 ** digits).padStart(digits, '0');
}

export const totpAt = (secret: string, at: Date): string => hotp(base32Decode(secret), timeStepOf(at));

/**
 * The step whose code `code` is, within the window around `at`, later than `afterStep` (the last
 * step used: a code is good once); undefined when none matches. Compares in constant time.
 */
export function matchTotp(secret: string, code: string, at: Date, afterStep: number | null): number | undefined {
  if (!isTotpCode(code)) return undefined;
  const key = base32Decode(secret);
  const current = timeStepOf(at);
  let matched: number | undefined;
  for (let step = current - TOTP_WINDOW_STEPS; step <= current + TOTP_WINDOW_STEPS; step++) {
    if (afterStep !== null && step <= afterStep) continue;
    if (timingSafeEqual(Buffer.from(hotp(key, step)), Buffer.from(code))) matched ??= step;
  }
  return matched;
}

/** The otpauth:// URL authenticator apps read from a QR code (Key Uri Format). */
export function otpauthUrl(issuer: string, account: string, secret: string): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(account)}`;
  const query = new URLSearchParams({ secret, issuer, algorithm: 'SHA1', digits: String(TOTP_DIGITS), period: String(TOTP_STEP_SECONDS) });
  return `otpauth://totp/${label}?${query.toString()}`;
}
