import type { FastifyRequest } from 'fastify';
import type { Principal } from '../auth/access-tokens.js';
import { authenticate, principalOf } from '../auth/authenticate.js';
import type { FeatureDeps } from '../deps.js';
import { AppError } from '../http/errors.js';

/** Authenticates (401) and lets only the given roles through (403): users and API keys alike. */
export function requireRole(deps: FeatureDeps, ...roles: Principal['role'][]) {
  const authenticated = authenticate(deps);
  return async (request: FastifyRequest, reply: Parameters<typeof authenticated>[1]): Promise<void> => {
    await authenticated(request, reply);
    if (!roles.includes(principalOf(request).role)) throw new AppError('forbidden', `Only ${roles.join(' and ')} credentials may use this.`);
  };
}

export const ADMIN_SECURITY = [{ bearerAuth: [] }];
