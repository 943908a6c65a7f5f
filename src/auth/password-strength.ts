import { Worker } from 'node:worker_threads';
import { AppError, invalidField } from '../http/errors.js';
import type { ProblemExample } from '../http/openapi.js';
import { PASSWORD_WORK_RETRY_AFTER_SECONDS } from './passwords.js';
import type { Verdict } from './password-estimator.js';
import { passwordLengthProblem } from './password-bounds.js';

/**
 * The one rule for a password being set: user creation (CLI, admin API), an administrator's reset
 * and a user's own change all call `checkNewPassword` before hashing. Login never does: a password
 * is judged when it is chosen, and users whose passwords predate the rule keep logging in.
 */
export interface NewPasswordCheck {
  /** Where the password was given, for the 400's field error: `body.password`, `body.new_password`. */
  field: string;
  /** Words of this account that the password must not lean on (its user name). */
  userInputs: string[];
  /** PASSWORD_MIN_SCORE. */
  minScore: number;
}

/** Known to anyone attacking this installation, like the user's name. */
const SITE_WORDS = ['plaza'];
const TOO_COMMON = 'This password is too common: it is in the lists of passwords that attackers try first. Choose another one; a few uncommon words make a strong password.';

const tooCommon = (field: string) => invalidField(field, TOO_COMMON);

/** The 400 of a common password, as the OpenAPI document shows it for the routes that set one. */
export const commonPasswordExample = (field: string): ProblemExample => ({
  summary: 'A password of the bundled list of common and breached passwords (one only too easy to guess: "This password is too easy to guess (…). …")',
  error: tooCommon(field),
});

/**
 * Throws 400 `validation_failed` naming `field`, with a reason a person can act on, when the
 * password is out of bounds, is (a variant of) a password of the bundled common-password list, or
 * scores below `minScore`. Local only (password-estimator.ts): nothing is asked over the network.
 */
export async function checkNewPassword(password: string, check: NewPasswordCheck): Promise<void> {
  const outOfBounds = passwordLengthProblem(password);
  if (outOfBounds) throw invalidField(check.field, outOfBounds);
  const verdict = await estimate(password, [...check.userInputs, ...SITE_WORDS]);
  if (verdict.common) throw tooCommon(check.field);
  if (verdict.score < check.minScore) throw invalidField(check.field, tooEasy(verdict));
}

function tooEasy({ warning, suggestions }: Verdict): string {
  const advice = suggestions.length > 0 ? suggestions.join(' ') : 'Add more words that are less common.';
  return `This password is too easy to guess${warning ? ` (${warning.replace(/\.$/, '')})` : ''}. ${advice}`;
}

/**
 * The estimator runs in one worker thread per process, started on the first password set (most
 * processes never start it): its tens of milliseconds per password, and its 0.4 s of loading,
 * never hold the event loop that serves everyone's requests. Requests queue there one at a time.
 */
let worker: Worker | undefined;
const pending = new Map<number, { resolve: (verdict: Verdict) => void; reject: (error: Error) => void }>();
let nextId = 0;

/** Estimates waiting at most (about 0.1 s each): past it, 503 with Retry-After, never a longer queue. */
const MAX_PENDING = 32;

function estimate(password: string, userInputs: string[]): Promise<Verdict> {
  if (pending.size >= MAX_PENDING) {
    return Promise.reject(new AppError('service_unavailable', 'Too many passwords are being judged; retry shortly.', {
      headers: { 'retry-after': String(PASSWORD_WORK_RETRY_AFTER_SECONDS) },
    }));
  }
  const thread = (worker ??= startWorker());
  const id = ++nextId;
  return new Promise<Verdict>((resolve, reject) => {
    pending.set(id, { resolve, reject });
    thread.ref(); // an answer is awaited: the process (a CLI command) must not end before it
    thread.postMessage({ id, password, userInputs });
  });
}

function startWorker(): Worker {
  const thread = new Worker(new URL('./password-strength.worker.js', import.meta.url));
  thread.unref();
  thread.on('message', (answer: { id: number; verdict?: Verdict; error?: string }) => {
    const waiting = pending.get(answer.id);
    pending.delete(answer.id);
    if (pending.size === 0) thread.unref(); // idle, it keeps no process alive
    if (answer.verdict) waiting?.resolve(answer.verdict);
    else waiting?.reject(new Error(`password estimator: ${answer.error}`));
  });
  const fail = (error: Error) => {
    if (worker === thread) worker = undefined; // the next password starts a new one
    for (const waiting of pending.values()) waiting.reject(error);
    pending.clear();
  };
  thread.on('error', fail);
  thread.on('exit', (code) => fail(new Error(`password estimator exited with code ${code}`)));
  return thread;
}
