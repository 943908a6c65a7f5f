import { Algorithm, hash, verify } from '@node-rs/argon2';

/** OWASP's argon2id baseline: 19 MiB, 2 passes, 1 lane (≈12 ms per verify, off the event loop). */
export const PASSWORD_PARAMS = { algorithm: Algorithm.Argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

const PARAMS_MARKER = `$argon2id$v=19$m=${PASSWORD_PARAMS.memoryCost},t=${PASSWORD_PARAMS.timeCost},p=${PASSWORD_PARAMS.parallelism}$`;

export function hashPassword(password: string): Promise<string> {
  return hash(password, PASSWORD_PARAMS);
}

export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  try {
    return await verify(passwordHash, password);
  } catch {
    return false;
  }
}

/** A stored hash made with other parameters is replaced on the next successful login. */
export function needsRehash(passwordHash: string): boolean {
  return !passwordHash.startsWith(PARAMS_MARKER);
}

let dummyHash: Promise<string> | undefined;

/**
 * Verifies against a throwaway hash, so that an unknown user costs the same time as a wrong
 * password and timing does not reveal which user names exist.
 */
export async function verifyDummyPassword(password: string): Promise<false> {
  dummyHash ??= hashPassword('plaza-dummy-password-for-timing');
  await verifyPassword(await dummyHash, password);
  return false;
}
