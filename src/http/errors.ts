/**
 * The closed set of error codes of the API. Codes are contract: clients branch on `code`.
 * Every error leaves the service as RFC 9457 problem+json (see problem.ts).
 */
export const errorCatalog = {
  validation_failed: { status: 400, title: 'The request is not valid' },
  malformed_json: { status: 400, title: 'The body is not valid JSON' },
  immutable_field: { status: 400, title: 'The field cannot be changed' },
  unauthorized: { status: 401, title: 'A valid access token is required' },
  invalid_credentials: { status: 401, title: 'Wrong user name or password' },
  invalid_refresh_token: { status: 401, title: 'The refresh token is invalid or expired; log in again' },
  invalid_dpop_proof: { status: 401, title: 'The DPoP proof is missing or not valid' },
  mfa_required: { status: 401, title: 'The password is right; send a second-factor code with the mfa_token' },
  mfa_enrollment_required: { status: 401, title: 'The role of this user requires a second factor; enrol one with the mfa_token' },
  invalid_mfa_token: { status: 401, title: 'The mfa_token is invalid, used or expired; log in again' },
  invalid_mfa_code: { status: 401, title: 'The second-factor code is wrong or already used' },
  user_inactive: { status: 403, title: 'The user is disabled' },
  forbidden: { status: 403, title: 'Not allowed' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  request_timeout: { status: 408, title: 'The request took too long to arrive' },
  webhook_code_taken: { status: 409, title: 'A webhook with this code already exists' },
  webhook_limit_reached: { status: 409, title: 'The webhook limit is reached' },
  conflict: { status: 409, title: 'Conflict with the current state' },
  tenant_inactive: { status: 409, title: 'The seller or marketplace is deactivated' },
  cursor_expired: { status: 410, title: 'The cursor is older than the retention; notifications after it may have been pruned' },
  payload_too_large: { status: 413, title: 'The body is too large' },
  uri_too_long: { status: 414, title: 'A path segment is too long' },
  unsupported_media_type: { status: 415, title: 'Unsupported content type; send application/json' },
  rate_limited: { status: 429, title: 'Too many attempts' },
  headers_too_large: { status: 431, title: 'The request headers are too large' },
  internal_error: { status: 500, title: 'Internal error' },
  service_unavailable: { status: 503, title: 'Service temporarily unavailable; retry later' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof errorCatalog;

export interface FieldError {
  /** Where the problem is, as a dotted path: `body.callback_url`, `query.limit`. */
  field: string;
  message: string;
}

export interface AppErrorOptions {
  /** One entry per bad field for validation errors. */
  errors?: FieldError[];
  /** Response headers, such as Retry-After. */
  headers?: Record<string, string>;
  /** Extra members of the problem body (RFC 9457 extension members). */
  extensions?: Record<string, unknown>;
}

export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    readonly detail: string = errorCatalog[code].title,
    readonly options: AppErrorOptions = {},
  ) {
    super(detail);
    this.status = errorCatalog[code].status;
  }
}

export const notFound = (what = 'The resource does not exist') => new AppError('not_found', what);
export const invalidField = (field: string, message: string) =>
  new AppError('validation_failed', `${field}: ${message}`, { errors: [{ field, message }] });

/** 429 `rate_limited`: "<detail>; retry in N s.", with Retry-After and `retry_after` (seconds). */
export function rateLimited(retryAfterSeconds: number, detail: string): AppError {
  return new AppError('rate_limited', `${detail}; retry in ${retryAfterSeconds} s.`, {
    headers: { 'retry-after': String(retryAfterSeconds) },
    extensions: { retry_after: retryAfterSeconds },
  });
}
