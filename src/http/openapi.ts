import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { packageVersion } from '../paths.js';
import { errorCatalog } from './errors.js';

/** The problem+json schema every error response refers to. */
export const ProblemSchema = {
  $id: 'Problem',
  type: 'object',
  description: 'RFC 9457 problem details. `code` is one of the documented error codes (docs/errors.md).',
  required: ['type', 'title', 'status', 'detail', 'code', 'request_id'],
  properties: {
    type: { type: 'string', examples: ['urn:plaza:problem:validation_failed'] },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    code: { type: 'string', enum: Object.keys(errorCatalog) },
    request_id: { type: 'string' },
    errors: {
      type: 'array',
      items: { type: 'object', required: ['field', 'message'], properties: { field: { type: 'string' }, message: { type: 'string' } } },
    },
    retry_after: { type: 'integer', description: 'Seconds to wait, on 429 and 503.' },
  },
} as const;

/** Error responses for a route's schema: `problemResponses(400, 401, 404)`. */
export function problemResponses(...statuses: number[]): Record<number, unknown> {
  const responses: Record<number, unknown> = {};
  for (const status of statuses) {
    const codes = Object.entries(errorCatalog).filter(([, entry]) => entry.status === status).map(([code]) => code);
    responses[status] = { description: `Problem (${codes.join(', ')})`, content: { 'application/problem+json': { schema: { $ref: 'Problem#' } } } };
  }
  return responses;
}

export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  app.addSchema(ProblemSchema);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Plaza',
        version: packageVersion,
        description: 'Authentication (JWT access token, rotating refresh token) and webhook subscriptions with reliable, signed delivery for multi-marketplace sellers.',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      servers: [{ url: '/' }],
      tags: [
        { name: 'auth', description: 'Login, token refresh and sessions' },
        { name: 'products', description: 'The seller in context' },
        { name: 'webhooks', description: 'Webhook subscriptions per marketplace' },
        { name: 'events', description: 'Event intake from the platform' },
        { name: 'deliveries', description: 'Delivery history and steering' },
        { name: 'portal', description: 'Links into the web portal at /portal' },
        { name: 'operations', description: 'Health, readiness and metrics' },
        { name: 'admin', description: 'Administration: marketplaces, sellers, connections, users and API keys' },
      ],
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT or API key (plz_…)' } },
      },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    // A route that declares no security is public: say so (`security: []`), as OpenAPI linters require.
    transform: ({ schema, url }) => ({ schema: schema && !('security' in schema) ? { ...schema, security: [] } : schema, url }),
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: true,
    // The UI's default CSP carries upgrade-insecure-requests: reached over plain HTTP by a host name
    // (a LAN address, a container), the browser then asks for its scripts over https and shows a blank page.
    transformStaticCSP: (header) => withoutUpgradeInsecureRequests(header),
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}

export function withoutUpgradeInsecureRequests(csp: string): string {
  return csp.replace(/\s*upgrade-insecure-requests;?/g, '').trim();
}
