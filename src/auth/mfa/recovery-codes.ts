import { createHash, randomInt } from 'node:crypto';

/** How many recovery codes a user gets at a time (each is good once). */
export const RECOVERY_CODE_COUNT = 10;

// Without 0/O, 1/I/L: people copy these from paper.
const ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';

/** A code of 12 characters of 31 (≈59 bits), shown as XXXX-XXXX-XXXX. */
export function newRecoveryCode(): string {
  let raw = '';
  for (let i = 0; i < 12; i++) raw += ALPHABET[randomInt(ALPHABET.length)];
  return `${raw.slice(0, 4)}-${raw.slice(4, 8)}-${raw.slice(8)}`;
}

/** What a typed code is compared as: case, spaces and dashes do not matter. */
export function normalizeRecoveryCode(code: string): string | undefined {
  const raw = code.replace(/[\s-]/g, '').toUpperCase();
  return raw.length === 12 && [...raw].every((char) => ALPHABET.includes(char)) ? raw : undefined;
}

/** Stored hashed: random codes need no slow hash (like refresh tokens). */
export function hashRecoveryCode(normalized: string): Buffer {
  return createHash('sha256').update(`plaza-recovery:${normalized}`).digest();
}
