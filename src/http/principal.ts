import type { FastifyRequest } from 'fastify';
import type { Principal } from '../accounts/principal.js';
import { AppError } from './errors.js';

// Who a request speaks for, once auth/authenticate.ts has checked its credential. Here, below the
// auth layer, so that the HTTP pieces that count or limit by tenant (tenant-rate-limit.ts,
// request-metrics.ts) read it without importing auth.

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
}

/** The principal of a route behind `authenticate`. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new AppError('unauthorized');
  return request.principal;
}
