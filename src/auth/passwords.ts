import { Algorithm, hash, verify } from '@node-rs/argon2';
import { AppError } from '../http/errors.js';

/** OWASP's argon2id baseline: 19 MiB, 2 passes, 1 lane (≈12 ms per verify, off the event loop). */
export const PASSWORD_PARAMS = { algorithm: Algorithm.Argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

const PARAMS_MARKER = `$argon2id$v=19$m=${PASSWORD_PARAMS.memoryCost},t=${PASSWORD_PARAMS.timeCost},p=${PASSWORD_PARAMS.parallelism}$`;

/** Seconds a caller refused for want of a slot is asked to wait (a verification takes ≈12 ms). */
export const PASSWORD_WORK_RETRY_AFTER_SECONDS = 1;

/**
 * Password work in progress in this process: hashes and verifications running on libuv's threads
 * or waiting for one. Anyone can start one (a login costs nothing to send, from as many addresses
 * as one likes), so past the bound a caller is refused at once (503 with Retry-After) rather than
 * queued: an unbounded queue made every login, and every other user of libuv's threads (DNS
 * lookups of deliveries, files), wait behind the whole flood. Process-wide on purpose: every caller
 * (login, portal login, password change, user creation, reset) draws on the same threads.
 * The bound is ARGON2_MAX_IN_PROGRESS, set by buildApp (limitPasswordWork); this default is its
 * documented default, for processes that build no app (the CLI).
 */
let maxInProgress = 32;
let inProgress = 0;
let peak = 0;

export function limitPasswordWork(max: number): void {
  maxInProgress = max;
}

/** For tests and operators: what is in progress now, the most so far, and the bound. */
export function passwordWorkStats(): { inProgress: number; peak: number; max: number } {
  return { inProgress, peak, max: maxInProgress };
}

export function resetPasswordWorkPeak(): void {
  peak = inProgress;
}

/** One unit of password work, reserved: its hashes and verifications run one after another. */
export interface PasswordWork {
  hash(password: string): Promise<string>;
  verify(passwordHash: string, password: string): Promise<boolean>;
  /** A verification against a throwaway hash (see verifyDummyPassword). */
  verifyDummy(password: string): Promise<false>;
  /** Frees the slot; later calls do nothing. */
  release(): void;
}

/**
 * Reserves a slot for password work, or throws 503 `service_unavailable` (with Retry-After) when
 * ARGON2_MAX_IN_PROGRESS are in progress. For a caller that must know it may verify before it
 * commits to something else (login reserves before the login limits count its attempt, so that a
 * 503 never counts as a failure); release it in a finally.
 */
export function reservePasswordWork(): PasswordWork {
  if (inProgress >= maxInProgress) {
    throw new AppError('service_unavailable', 'Too many password checks are in progress; retry shortly.', {
      headers: { 'retry-after': String(PASSWORD_WORK_RETRY_AFTER_SECONDS) },
    });
  }
  inProgress += 1;
  peak = Math.max(peak, inProgress);
  let released = false;
  return {
    hash: hashUnbounded,
    verify: verifyUnbounded,
    verifyDummy: verifyDummyUnbounded,
    release() {
      if (released) return;
      released = true;
      inProgress -= 1;
    },
  };
}

async function withPasswordWork<T>(work: (slot: PasswordWork) => Promise<T>): Promise<T> {
  const slot = reservePasswordWork();
  try {
    return await work(slot);
  } finally {
    slot.release();
  }
}

/** Hashes a new password (bounded: 503 past ARGON2_MAX_IN_PROGRESS). */
export function hashPassword(password: string): Promise<string> {
  return withPasswordWork((slot) => slot.hash(password));
}

/** Checks a password against its hash (bounded: 503 past ARGON2_MAX_IN_PROGRESS). */
export function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  return withPasswordWork((slot) => slot.verify(passwordHash, password));
}

/**
 * Verifies against a throwaway hash, so that an unknown user costs the same time as a wrong
 * password and timing does not reveal which user names exist (bounded like the others).
 */
export function verifyDummyPassword(password: string): Promise<false> {
  return withPasswordWork((slot) => slot.verifyDummy(password));
}

/** A stored hash made with other parameters is replaced on the next successful login. */
export function needsRehash(passwordHash: string): boolean {
  return !passwordHash.startsWith(PARAMS_MARKER);
}

function hashUnbounded(password: string): Promise<string> {
  return hash(password, PASSWORD_PARAMS);
}

async function verifyUnbounded(passwordHash: string, password: string): Promise<boolean> {
  try {
    return await verify(passwordHash, password);
  } catch {
    return false;
  }
}

let dummyHash: Promise<string> | undefined;

/**
 * Builds the throwaway hash now, so that the first unknown-user login costs what later ones do.
 * Once per process and outside the bound: a refusal must not be what the process keeps.
 */
export function prepareDummyHash(): Promise<string> {
  return (dummyHash ??= hashUnbounded('plaza-dummy-password-for-timing'));
}

async function verifyDummyUnbounded(password: string): Promise<false> {
  await verifyUnbounded(await prepareDummyHash(), password);
  return false;
}
