import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from './errors.js';

type Done = (error: Error | null, value?: unknown) => void;
export type JsonBodyParser = (request: FastifyRequest, body: string, done: Done) => void;

/**
 * Fastify's own JSON parser (its guard against prototype pollution on), with one refusal told
 * apart: a body that is valid JSON but holds a `__proto__` key, or a `constructor` key holding
 * `prototype`, which the guard refuses with the same error as broken JSON. The second parse runs
 * only for a body already refused.
 *
 * An empty body is no body, as if no Content-Type had come: clients configured to send
 * `Content-Type: application/json` on every call send it on DELETE, logout and the like too.
 * A route that needs a body then says which field is missing (validation_failed), as without the header.
 */
export function jsonBodyParser(app: FastifyInstance): JsonBodyParser {
  const parse = app.getDefaultJsonParser('error', 'error');
  return (request, body, done) => {
    if (body.length === 0) return done(null, undefined);
    parse(request, body, (error: Error | null, value?: unknown) => {
      if (error && isJson(body)) {
        const message = 'must not hold a key named __proto__, nor a constructor key holding prototype';
        return done(new AppError('validation_failed', `body ${message}`, { errors: [{ field: 'body', message }] }));
      }
      done(error, value);
    });
  };
}

/** Replaces the JSON parser of `app` (the whole application, or an encapsulated plugin) with `parser`. */
export function useJsonParser(app: FastifyInstance, parser: JsonBodyParser): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => parser(request, body as string, done));
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
