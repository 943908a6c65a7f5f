import type { FastifyRequest } from 'fastify';
import type { Principal } from '../accounts/principal.js';
import { authenticate, unauthorized, USER_GONE } from '../auth/authenticate.js';
import { principalOf } from '../http/principal.js';
import type { Queryable } from '../db/database.js';
import type { FeatureDeps } from '../deps.js';
import { AppError } from '../http/errors.js';

/**
 * Authenticates (401) and lets only the given roles through (403): users and API keys alike.
 *
 * Administration is where a stateless access token could do lasting harm: in the minutes it has
 * left, the token of a deactivated or deleted user could mint an API key that never expires, create
 * another admin, or switch its own user back on. So here an access token must still belong to an
 * active user: one primary-key probe per request (API keys are looked up at every request anyway,
 * and a revoked one is refused there).
 */
export function requireRole(deps: FeatureDeps, ...roles: Principal['role'][]) {
  const authenticated = authenticate(deps);
  return async (request: FastifyRequest, reply: Parameters<typeof authenticated>[1]): Promise<void> => {
    await authenticated(request, reply);
    const principal = principalOf(request);
    if (!roles.includes(principal.role)) throw new AppError('forbidden', `Only ${roles.join(' and ')} credentials may use this.`);
    if (principal.apiKeyId === undefined) await requireActiveUser(deps.db, principal.userId);
  };
}

async function requireActiveUser(db: Queryable, userId: number): Promise<void> {
  const { rows } = await db.query<{ active: boolean }>(`SELECT active FROM users WHERE id = $1`, [userId]);
  if (rows.length === 0) throw unauthorized(USER_GONE);
  if (!rows[0]!.active) throw unauthorized('The user of this access token is deactivated.');
}

export const ADMIN_SECURITY = [{ bearerAuth: [] }];
