import type { FastifyRequest } from 'fastify';
import { userAgentOf, type RequestOrigin } from './auth-events.repository.js';

/** IP (request.ip: the socket, or X-Forwarded-For within TRUST_PROXY hops) and User-Agent. */
export function originOf(request: FastifyRequest): RequestOrigin {
  return { ip: request.ip, userAgent: userAgentOf(request.headers['user-agent']) };
}
