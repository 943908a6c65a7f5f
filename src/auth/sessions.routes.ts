import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { FeatureDeps } from '../deps.js';
import { notFound } from '../http/errors.js';
import { problemResponses } from '../http/openapi.js';
import { authenticate, userPrincipalOf } from './authenticate.js';
import { originOf } from './request-origin.js';
import { listActiveSessions } from './sessions.repository.js';
import { revokeOneSession } from './sessions.service.js';

/** Most sessions one listing returns (most recently used first). */
export const SESSION_LIST_LIMIT = 200;

const SessionSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    created_at: Type.String({ format: 'date-time' }),
    last_used_at: Type.String({ format: 'date-time' }),
    user_agent: Type.Union([Type.String(), Type.Null()]),
    ip: Type.Union([Type.String(), Type.Null()]),
    current: Type.Boolean({ description: 'This is the session of the access token used for the request.' }),
  },
  { additionalProperties: false },
);

export const sessionRoutes: FastifyPluginAsyncTypebox<FeatureDeps> = async (app, deps) => {
  const { db, clock } = deps;
  app.addHook('onRequest', authenticate(deps));

  app.get(
    '/api/v2/auth/sessions',
    {
      schema: {
        operationId: 'listSessions',
        tags: ['auth'],
        summary: 'List the active sessions of the user',
        description: `Sessions that can still be refreshed, most recently used first (at most ${SESSION_LIST_LIMIT}).`,
        security: [{ bearerAuth: [] }],
        response: { 200: Type.Array(SessionSchema), ...problemResponses(401, 403, 503) },
      },
    },
    async (request) => {
      const principal = userPrincipalOf(request);
      const sessions = await listActiveSessions(db, principal.userId, clock.now(), SESSION_LIST_LIMIT);
      return sessions.map((session) => ({
        id: session.id,
        created_at: session.created_at.toISOString(),
        last_used_at: session.last_used_at.toISOString(),
        user_agent: session.user_agent,
        ip: session.ip,
        current: session.id === principal.sessionId,
      }));
    },
  );

  app.delete(
    '/api/v2/auth/sessions/:id',
    {
      schema: {
        operationId: 'revokeSession',
        tags: ['auth'],
        summary: 'Revoke one session of the user',
        description: 'Revokes the session and its refresh token (reason session_revoked). Access tokens already issued stay valid until they expire.',
        security: [{ bearerAuth: [] }],
        params: Type.Object({ id: Type.String({ format: 'uuid' }) }),
        response: { 204: Type.Null({ description: 'Session revoked' }), ...problemResponses(400, 401, 403, 404, 503) },
      },
    },
    async (request, reply) => {
      const found = await revokeOneSession(db, userPrincipalOf(request), request.params.id, originOf(request), clock.now());
      if (!found) throw notFound('No session of yours has this id.');
      return reply.code(204).send(null);
    },
  );
};
