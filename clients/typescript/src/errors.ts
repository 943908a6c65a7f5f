import type { Problem } from './types.js';

/** An answer of Plaza that is not a success: the status, the problem's code and the whole problem. */
export class PlazaApiError extends Error {
  readonly status: number;
  readonly code: string | undefined;
  readonly problem: Problem | undefined;
  /** Seconds from the Retry-After header, when the answer had one. */
  readonly retryAfterSeconds: number | undefined;

  constructor(status: number, problem: Problem | undefined, retryAfterSeconds?: number) {
    super(`Plaza answered ${status}${problem?.code ? ` ${problem.code}` : ''}${problem?.detail ? `: ${problem.detail}` : problem?.title ? `: ${problem.title}` : ''}`);
    this.name = 'PlazaApiError';
    this.status = status;
    this.code = problem?.code;
    this.problem = problem;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** The password was right and the user has a second factor: finish with `POST /api/v2/auth/mfa/verify`. */
export class MfaRequiredError extends PlazaApiError {
  readonly mfaToken: string;
  constructor(status: number, problem: Problem) {
    super(status, problem);
    this.name = 'MfaRequiredError';
    this.mfaToken = String(problem.mfa_token);
  }
}

/** A client used without credentials: neither an API key nor a logged-in session. */
export class NotLoggedInError extends Error {
  constructor() {
    super('No credentials: log in with session.login(…) (or give tokens to its store), or give an apiKey');
    this.name = 'NotLoggedInError';
  }
}
