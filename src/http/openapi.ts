import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { packageVersion } from '../paths.js';
import { errorCatalog, type AppError } from './errors.js';
import { PrebuiltDocument } from './prebuilt-document.js';
import { problemOf } from './problem.js';

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
    limit: { type: 'integer', description: 'The limit reached, on 409 `webhook_limit_reached`.' },
    mfa_token: { type: 'string', description: 'On 401 `mfa_required` (for POST /api/v2/auth/mfa/verify) and `mfa_enrollment_required` (for enrolment only): single use, short-lived.' },
    expires_in: { type: 'integer', description: 'Seconds the mfa_token stays valid.' },
    methods: { type: 'array', items: { type: 'string', enum: ['totp', 'recovery_code', 'passkey'] }, description: 'On 401 `mfa_required`: what finishes the login: codes mfa/verify takes (totp, recovery_code), or passkey: a passkey, in the portal only.' },
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

/** An example of a refusal: the error the code throws, and what it means to a client. */
export interface ProblemExample {
  summary: string;
  error: AppError;
}

/**
 * A problem response with named examples of its bodies, for the refusals a client must handle (a
 * login's 401 mfa_required): `problemWithExamples(401, { mfa_required: { summary, error } })`. Each
 * body is the one the error is answered with (problemOf), so the example cannot drift from the code.
 */
export function problemWithExamples(status: number, examples: Record<string, ProblemExample>): Record<string, unknown> {
  const response = problemResponses(status)[status] as { description: string; content: Record<string, Record<string, unknown>> };
  const values = Object.fromEntries(Object.entries(examples).map(([name, { summary, error }]) => [name, { summary, value: problemOf(error, EXAMPLE_REQUEST_ID) }]));
  return { ...response, content: { 'application/problem+json': { ...response.content['application/problem+json'], examples: values } } };
}
const EXAMPLE_REQUEST_ID = '9b2e4d1c-0a6f-4e8b-b3c5-7d1f2a9e6c40';

/** The response headers Plaza sends, described once; routes name them with `responseHeaders`. */
const HEADERS = {
  'X-Request-Id': { type: 'string', description: 'The request id (the caller\'s own when it sent a sane one); it is also `request_id` in problem bodies and in the logs.' },
  'Retry-After': { type: 'integer', minimum: 1, description: 'Seconds to wait before trying again.' },
  'WWW-Authenticate': {
    type: 'string',
    description: 'The challenge: `Bearer` or `Bearer error="invalid_token"` (RFC 6750); for a DPoP-bound token or a refused DPoP proof `DPoP error="invalid_token"` or `DPoP error="invalid_dpop_proof"` with `algs` (RFC 9449).',
  },
  Location: { type: 'string', description: 'Path of the created resource.' },
  Link: { type: 'string', description: 'RFC 8288 link to the next page (`rel="next"`), present while there are more.' },
} as const;
type HeaderName = keyof typeof HEADERS;

/** A response schema with headers documented: `responseHeaders(WebhookList, 'Link')`. */
export function responseHeaders<T extends object>(schema: T, ...names: HeaderName[]): T {
  return { ...schema, headers: Object.fromEntries(names.map((name) => [name, HEADERS[name]])) };
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

interface RouteSchema {
  hide?: boolean;
  body?: unknown;
  operationId?: string;
  response?: Record<string, Record<string, unknown>>;
  [key: string]: unknown;
}

/**
 * What every operation has in common, added once here instead of in every route (so that a new route
 * gets it for free): the X-Request-Id header on every response; 400 on every route (the input guard
 * and a JSON body that does not parse), and 408 and 431 (headers too slow or too large: the HTTP
 * parser's refusals, before any route, writeClientProblem); 414 on routes with path parameters; 503 (database
 * unreachable, with Retry-After) on every route but /healthz; 413 and 415 on routes that can get a
 * body; Retry-After on 429 and 503, WWW-Authenticate on 401 where the operation takes a bearer credential
 * (login and refresh take theirs in the body: their 401 carries no challenge). Throws at start when a route has no
 * operationId: generated clients name their methods after it.
 */
export function completeOperation(schema: RouteSchema, url: string, method: string): RouteSchema {
  if (schema.hide) return schema;
  if (!schema.operationId) throw new Error(`Route ${url} has no operationId in its schema.`);
  const bearer = Array.isArray(schema.security) && schema.security.length > 0;
  // Wherever an access token is taken, a DPoP-bound one is too (src/auth/authenticate.ts).
  const security = bearer && (schema.security as Record<string, unknown>[]).some((entry) => 'bearerAuth' in entry) ? [...(schema.security as object[]), { dpopAuth: [] }] : schema.security;
  // Every route checks its query and path values (input-guard.ts), and a body when one comes.
  const extra: number[] = [400, 408, 431];
  // A path segment longer than Fastify's maxParamLength (problem.ts, uri_too_long).
  if (/[:{]/.test(url)) extra.push(414);
  if (url !== '/healthz') extra.push(503);
  // Fastify reads a body on these methods whenever a Content-Type comes, even where the route takes
  // none: a body of another type is 415 and one over the limit 413 there too.
  if (schema.body || BODY_METHODS.has(method)) extra.push(413, 415);
  const responses: Record<string, Record<string, unknown>> = { ...problemResponses(...extra), ...schema.response } as Record<string, Record<string, unknown>>;
  for (const [status, response] of Object.entries(responses)) {
    const headers: Record<string, unknown> = { 'X-Request-Id': HEADERS['X-Request-Id'], ...(response.headers as object | undefined) };
    if (status === '429' || status === '503') headers['Retry-After'] = HEADERS['Retry-After'];
    if (status === '401' && bearer) headers['WWW-Authenticate'] = HEADERS['WWW-Authenticate'];
    responses[status] = { ...response, headers };
  }
  return { ...schema, ...(security === undefined ? {} : { security }), response: responses };
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
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT or API key (plz_…)' },
          dpopAuth: {
            type: 'http',
            scheme: 'DPoP',
            description: 'A DPoP-bound access token (RFC 9449; token_type DPoP in the login result): `Authorization: DPoP <token>` plus a `DPoP` header, a proof signed by the bound key with a new jti, htm and htu of this request, iat, and ath (base64url SHA-256 of the token). See docs/authentication.md.',
          },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    // A route that declares no security is public: say so (`security: []`), as OpenAPI linters require.
    transform: ({ schema, url, route }) => {
      if (!schema) return { schema, url };
      const complete = completeOperation(schema as RouteSchema, url, String(route.method));
      return { schema: 'security' in complete ? complete : { ...complete, security: [] }, url };
    },
  });
  // Built once (and each compressed variant once), not serialised per request: 250 KB of JSON.
  // Served at /openapi.json and at /docs/json, the URL the documentation page itself loads.
  const document = new PrebuiltDocument(() => app.swagger());
  app.addHook('onRoute', (route) => {
    if (route.url !== '/docs/json') return;
    route.handler = (request, reply) => document.send(request, reply);
    route.compress = false;
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: true,
    // The UI's default CSP carries upgrade-insecure-requests: reached over plain HTTP by a host name
    // (a LAN address, a container), the browser then asks for its scripts over https and shows a blank page.
    transformStaticCSP: (header) => withoutUpgradeInsecureRequests(header),
  });
  app.get('/openapi.json', { schema: { hide: true }, compress: false }, (request, reply) => document.send(request, reply));
}

export function withoutUpgradeInsecureRequests(csp: string): string {
  return csp.replace(/\s*upgrade-insecure-requests;?/g, '').trim();
}
