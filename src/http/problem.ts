import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DatabaseUnavailableError, isStatementTimeout, isTransientConflict, isUnavailable } from '../db/database.js';
import { AppError, errorCatalog, type ErrorCode, type FieldError } from './errors.js';
import { noteRejection } from './request-log.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** Builds the RFC 9457 body; `type` names the code so that it can be looked up in docs/errors.md. */
export function problemBody(code: ErrorCode, detail: string, requestId: string, extra: Record<string, unknown> = {}) {
  const { status, title } = errorCatalog[code];
  return { type: `urn:plaza:problem:${code}`, title, status, detail, code, request_id: requestId, ...extra };
}

/** The body an error is answered with (its headers aside): what sendProblem sends, and the OpenAPI document's examples show. */
export function problemOf(error: AppError, requestId: string) {
  const extra: Record<string, unknown> = { ...error.options.extensions };
  if (error.options.errors) extra.errors = error.options.errors;
  return problemBody(error.code, error.detail, requestId, extra);
}

export function sendProblem(reply: FastifyReply, error: AppError): FastifyReply {
  for (const [name, value] of Object.entries(error.options.headers ?? {})) reply.header(name, value);
  return reply
    .code(error.status)
    .type(PROBLEM_CONTENT_TYPE)
    .send(problemOf(error, String(reply.request.id)));
}

interface AjvIssue {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

const PART_NAMES: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

/** One entry per bad field, as `body.callback_url`, from Ajv's issues. */
export function fieldErrors(context: string | undefined, issues: AjvIssue[]): FieldError[] {
  const part = PART_NAMES[context ?? 'body'] ?? context ?? 'body';
  const seen = new Set<string>();
  const errors: FieldError[] = [];
  for (const issue of issues) {
    let path = issue.instancePath.split('/').filter(Boolean).join('.');
    let message = issue.message ?? 'is not valid';
    if (issue.keyword === 'required') path = [path, String(issue.params.missingProperty)].filter(Boolean).join('.');
    if (issue.keyword === 'additionalProperties') {
      path = [path, String(issue.params.additionalProperty)].filter(Boolean).join('.');
      message = 'is not a known field';
    }
    const field = path ? `${part}.${path}` : part;
    const key = `${field}:${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    errors.push({ field, message });
  }
  return errors;
}

/** Maps whatever was thrown to one AppError; unknown errors become a generic 500. */
export function toAppError(error: FastifyError | Error, retryAfterSeconds: number): AppError {
  if (error instanceof AppError) return error;
  const e = error as FastifyError & { validationContext?: string };
  if (e.validation) {
    const errors = fieldErrors(e.validationContext, e.validation as unknown as AjvIssue[]);
    return new AppError('validation_failed', errors.map((x) => `${x.field} ${x.message}`).join('; '), { errors });
  }
  if (isUnavailable(error)) {
    const store = error instanceof DatabaseUnavailableError ? error.store : 'database';
    return new AppError('service_unavailable', `The ${store} is unreachable; retry later.`, { headers: { 'retry-after': String(retryAfterSeconds) } });
  }
  if (isStatementTimeout(error)) {
    return new AppError('service_unavailable', 'The database did not answer in time; retry later.', { headers: { 'retry-after': String(retryAfterSeconds) } });
  }
  if (isTransientConflict(error)) {
    return new AppError('service_unavailable', 'The request collided with a concurrent change; retry it.', { headers: { 'retry-after': '1' } });
  }
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large', 'The request body is larger than the limit.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError(e.statusCode === 415 ? 'unsupported_media_type' : 'validation_failed', e.statusCode === 415 ? 'Send the body as application/json.' : 'The Content-Length header does not match the body.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('malformed_json', 'The body is empty although Content-Type is application/json.');
  }
  if (e.statusCode === 400 && (error instanceof SyntaxError || /JSON/i.test(error.message))) {
    return new AppError('malformed_json', 'The body is not valid JSON.');
  }
  if (e.statusCode === 415) return new AppError('unsupported_media_type', 'Send the body as application/json.');
  if (e.statusCode === 413) return new AppError('payload_too_large', 'The request body is larger than the limit.');
  if (e.statusCode === 405) return new AppError('method_not_allowed');
  if (e.statusCode !== undefined && e.statusCode >= 400 && e.statusCode < 500) {
    return new AppError('validation_failed', 'The request is not valid.');
  }
  return new AppError('internal_error', 'The operation failed. The request id identifies it in the logs.');
}

export function registerProblemHandlers(app: FastifyInstance, retryAfterSeconds: number, allowedMethods: (path: string) => string[] = () => []): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const appError = toAppError(error, retryAfterSeconds);
    if (appError.status >= 500) {
      // 5xx bodies are generic; the cause goes to the log only.
      request.log.error({ err: error }, 'request failed');
    } else if (!(error instanceof AppError)) {
      noteRejection(request, appError.code, error.message);
    }
    return sendProblem(reply, appError);
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!;
    const allowed = allowedMethods(path);
    if (allowed.length > 0) {
      return sendProblem(reply, new AppError('method_not_allowed', `${path} does not support ${request.method}; it supports ${allowed.join(', ')}.`, { headers: { allow: allowed.join(', ') } }));
    }
    return sendProblem(reply, new AppError('not_found', `No route for ${request.method} ${path}.`));
  });
}

/**
 * Fastify's `frameworkErrors`: a path that fails before routing (bad percent-encoding, a segment
 * longer than any identifier) is answered in the same problem+json as every other error.
 */
export function sendFrameworkProblem(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  let appError: AppError;
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') appError = new AppError('uri_too_long', 'A path segment is longer than any identifier of the API.');
  else if (error.code === 'FST_ERR_BAD_URL') appError = new AppError('validation_failed', 'The URL is not valid (bad percent-encoding).');
  else appError = new AppError('internal_error', 'The operation failed. The request id identifies it in the logs.');
  void sendProblem(reply, appError);
}

/**
 * The server's `clientErrorHandler`: the HTTP parser refused the request (headers too large, a
 * malformed request line, too slow) before any request object exists, so the answer is written
 * to the socket here, still as problem+json.
 */
export function writeClientProblem(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const code: ErrorCode = error.code === 'HPE_HEADER_OVERFLOW' ? 'headers_too_large' : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'request_timeout' : 'validation_failed';
  const detail = code === 'validation_failed' ? 'The request is not valid HTTP.' : errorCatalog[code].title;
  const requestId = randomUUID();
  const body = JSON.stringify(problemBody(code, detail, requestId));
  const { status } = errorCatalog[code];
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${errorCatalog[code].title}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(error);
}
