import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FeatureDeps } from '../deps.js';
import { AppError } from '../http/errors.js';
import type { Keys } from '../keys.js';
import { AccessTokenVerifier, InvalidAccessTokenError, type Principal } from './access-tokens.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
}

const BEARER = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*)$/i;

function unauthorized(detail: string): AppError {
  return new AppError('unauthorized', detail, { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } });
}

// One verifier (and cache) per key set, shared by every route plugin of an app.
const verifiers = new WeakMap<Keys, AccessTokenVerifier>();

/**
 * A hook that requires `Authorization: Bearer <access token>` and sets request.principal. Routes
 * run it in onRequest, before the body is read: a caller without a token costs no parsing.
 */
export function authenticate({ keys, config, clock }: FeatureDeps) {
  let verifier = verifiers.get(keys);
  if (verifier?.config !== config) verifiers.set(keys, (verifier = new AccessTokenVerifier(keys, config)));
  const tokens = verifier;
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const header = request.headers.authorization;
    if (!header) throw new AppError('unauthorized', 'Send Authorization: Bearer <access token>.', { headers: { 'www-authenticate': 'Bearer' } });
    const match = BEARER.exec(header);
    if (!match) throw unauthorized('The Authorization header does not carry a bearer access token.');
    try {
      request.principal = await tokens.verify(match[1]!, clock.now());
    } catch (error) {
      if (error instanceof InvalidAccessTokenError) throw unauthorized('The access token is invalid or expired.');
      throw error;
    }
  };
}

/** The principal of a route behind `authenticate`. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new AppError('unauthorized');
  return request.principal;
}
