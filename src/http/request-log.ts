import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

/** Load balancers, orchestrators and scrapers call these every few seconds: at info they would drown the log. */
const PROBE_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/** Why a request was refused when its answer's body does not say it all (problem.ts): told on its one line. */
const rejections = new WeakMap<FastifyRequest, { code: string; reason: string }>();

export function noteRejection(request: FastifyRequest, code: string, reason: string): void {
  rejections.set(request, { code, reason });
}

/**
 * One line per request, written when the response is sent: Fastify's own logging writes two
 * ("incoming request" and "request completed"), and the second lacks the method and URL.
 * Probes and metric scrapes are logged at debug.
 */
export class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}

  /** The request line already says 404. */
  override routeNotFound(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const responseTime = Math.round(reply.elapsedTime * 10) / 10;
    if (error) {
      reply.log.error({ req: request, res: reply, err: error, responseTime }, 'request');
      return;
    }
    const level = PROBE_PATHS.has(request.url.split('?', 1)[0]!) ? 'debug' : 'info';
    reply.log[level]({ req: request, res: reply, responseTime, ...rejections.get(request) }, 'request');
  }
}
