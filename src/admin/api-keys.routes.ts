import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Principal } from '../accounts/principal.js';
import { findApiKey, listApiKeys, type ApiKeyRow } from '../auth/api-keys.repository.js';
import { createApiKey, renameApiKeyById, revokeApiKeyById } from '../auth/api-keys.service.js';
import { principalOf } from '../http/principal.js';
import type { FeatureDeps } from '../deps.js';
import { AppError, notFound } from '../http/errors.js';
import { problemResponses } from '../http/openapi.js';
import { MarketplaceCode } from '../http/path-params.js';
import { Id, IdParams, Name, RoleSchema } from './admin-schemas.js';
import { actorOf } from '../accounts/admin-audit.repository.js';
import { ADMIN_SECURITY, requireRole } from './admin-guard.js';
import { ADMIN_PAGE_SIZE, decodeKey, LINK_HEADER, pageOf, PageQuery } from './admin-pages.js';

const Role = RoleSchema;
const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Union([schema, Type.Null()]);

const ApiKey = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String(),
    prefix: Type.String({ description: 'The first characters of the key, to tell keys apart. The key itself is never shown again.' }),
    role: Role,
    marketplace_code: Nullable(Type.String()),
    seller_id: Type.Union([Type.Integer(), Type.Null()]),
    created_at: Type.String({ format: 'date-time' }),
    created_by: Type.String({ description: '`user:<id>`, `api_key:<id>` or `cli`.' }),
    creator: Type.Object({
      kind: Type.Union([Type.Literal('user'), Type.Literal('api_key'), Type.Literal('cli')]),
      id: Type.Union([Type.Integer(), Type.Null()], { description: 'The user\'s or key\'s id; null for the CLI.' }),
      name: Nullable(Type.String({ description: 'The user\'s or key\'s name now; null for the CLI or a deleted user.' })),
    }, { additionalProperties: false, description: 'Who made the key: a user, another API key (revoking that key revokes this one too), or the CLI.' }),
    last_used_at: Nullable(Type.String({ format: 'date-time', description: `When the key was last accepted, written at most once per API_KEY_LAST_USED_RESOLUTION_SECONDS (60 s by default): it may be up to that much older than the latest use.` })),
    expires_at: Nullable(Type.String({ format: 'date-time', description: 'From then on the key is refused (401). null: it never expires.' })),
    revoked_at: Nullable(Type.String({ format: 'date-time' })),
  },
  { additionalProperties: false },
);
/** A key made by another key (revoked with it), as docs/authentication.md shows it. */
const exampleKey = {
  id: 7, name: 'nightly import', prefix: 'plz_Xq3v9a', role: 'marketplace', marketplace_code: 'meli', seller_id: null, created_at: '2026-11-02T09:00:00.000Z',
  created_by: 'api_key:3', creator: { kind: 'api_key', id: 3, name: 'meli platform' }, last_used_at: '2026-11-26T21:14:00.000Z', expires_at: '2027-02-01T00:00:00.000Z', revoked_at: null,
};
const ApiKeyOut = Type.Object(ApiKey.properties, { additionalProperties: false, examples: [exampleKey] });
const ApiKeyList = Type.Array(ApiKey, { examples: [[exampleKey, { ...exampleKey, id: 8, name: 'ops laptop', prefix: 'plz_7Hd0Qe', created_by: 'user:12', creator: { kind: 'user', id: 12, name: 'maria' }, last_used_at: null, expires_at: null }]] });
const CreatedApiKey = Type.Object({ ...ApiKey.properties, key: Type.String({ description: 'The key, shown only in this response: `plz_` and 43 characters.' }) }, {
  additionalProperties: false,
  examples: [{ ...exampleKey, last_used_at: null, created_at: '2026-11-27T10:00:00.000Z', key: 'plz_Xq3v9aR2mT8kLw4cYp0sVb6nJd1fHz5gQe7uAi3oKx9' }],
});

function present(row: ApiKeyRow) {
  return {
    id: row.id,
    name: row.name,
    prefix: row.key_prefix,
    role: row.role,
    marketplace_code: row.marketplace_code,
    seller_id: row.seller_id,
    created_at: row.created_at.toISOString(),
    created_by: row.created_by,
    creator: creatorOf(row),
    last_used_at: row.last_used_at?.toISOString() ?? null,
    expires_at: row.expires_at?.toISOString() ?? null,
    revoked_at: row.revoked_at?.toISOString() ?? null,
  };
}

function creatorOf(row: ApiKeyRow): { kind: 'user' | 'api_key' | 'cli'; id: number | null; name: string | null } {
  if (row.created_by_api_key !== null) return { kind: 'api_key', id: row.created_by_api_key, name: row.creator_name };
  if (row.created_by_user !== null) return { kind: 'user', id: row.created_by_user, name: row.creator_name };
  return { kind: 'cli', id: null, name: null };
}

/** A marketplace's credentials see and make only keys of their own marketplace; admins see all. */
const scopeOf = (principal: Principal): string | undefined => (principal.role === 'admin' ? undefined : (principal.marketplaceCode ?? ''));
const noKey = () => notFound('There is no API key with this id.');

export const apiKeyRoutes: FastifyPluginAsyncTypebox<FeatureDeps> = async (app, deps) => {
  const { db, clock } = deps;
  app.addHook('onRequest', requireRole(deps, 'admin', 'marketplace'));
  const schema = { tags: ['admin'], security: ADMIN_SECURITY };

  app.post('/api/v2/admin/api-keys', {
    schema: {
      ...schema, operationId: 'createApiKey', summary: 'Create an API key',
      description: 'Returns the key once. It is sent as `Authorization: Bearer <key>` and acts like a user of its role: an admin key everywhere, a marketplace key for its marketplace (including events of every seller connected to it), a seller key for its seller. Marketplace credentials may create keys of their own marketplace only. A key made with an API key is revoked with it, and expires no later than it.',
      body: Type.Object({
        name: Name,
        role: Role,
        marketplace_code: Type.Optional(MarketplaceCode),
        seller_id: Type.Optional(Id),
        expires_at: Type.Optional(Type.String({ format: 'date-time', description: 'When the key stops working: in the future, and at most API_KEY_MAX_LIFETIME_DAYS ahead when that is set (400 otherwise). Without it the key expires after API_KEY_MAX_LIFETIME_DAYS, or never when that is 0 (the default).' })),
      }, { additionalProperties: false, examples: [{ name: 'nightly import', role: 'marketplace', marketplace_code: 'meli', expires_at: '2027-02-01T00:00:00Z' }] }),
      response: { 201: CreatedApiKey, ...problemResponses(400, 401, 403, 409, 503) },
    },
  }, async (request, reply) => {
    const principal = principalOf(request);
    const body = request.body;
    let marketplaceCode = body.marketplace_code;
    if (principal.role === 'marketplace') {
      if (body.role !== 'marketplace' || (marketplaceCode !== undefined && marketplaceCode !== principal.marketplaceCode)) {
        throw new AppError('forbidden', 'Marketplace credentials may create marketplace keys of their own marketplace only.');
      }
      marketplaceCode = principal.marketplaceCode ?? undefined;
    }
    const input = { name: body.name.trim(), role: body.role, marketplaceCode, sellerId: body.seller_id, expiresAt: body.expires_at === undefined ? undefined : new Date(body.expires_at) };
    const { row, key } = await createApiKey(db, input, actorOf(principal), clock.now(), { maxLifetimeDays: deps.config.API_KEY_MAX_LIFETIME_DAYS, expiresField: 'body.expires_at' });
    return reply.code(201).header('cache-control', 'no-store').send({ ...present(row), key });
  });

  app.get('/api/v2/admin/api-keys', {
    schema: { ...schema, operationId: 'listApiKeys', summary: 'List API keys', description: 'In id order, paginated, revoked ones included. Never the key itself.', querystring: PageQuery, response: { 200: { ...ApiKeyList, headers: LINK_HEADER }, ...problemResponses(400, 401, 403, 503) } },
  }, async (request, reply) => {
    const limit = request.query.limit ?? ADMIN_PAGE_SIZE;
    const scope = scopeOf(principalOf(request));
    const rows = await listApiKeys(db, { afterId: decodeKey(request.query.cursor, 0), limit: limit + 1, ...(scope === undefined ? {} : { marketplaceCode: scope }) });
    return pageOf(request, reply, rows, limit, (row) => row.id).map(present);
  });

  app.get('/api/v2/admin/api-keys/:id', {
    schema: { ...schema, operationId: 'getApiKey', summary: 'Get an API key', params: IdParams, response: { 200: ApiKeyOut, ...problemResponses(400, 401, 403, 404, 503) } },
  }, async (request) => {
    const row = await findApiKey(db, request.params.id, scopeOf(principalOf(request)));
    if (!row) throw noKey();
    return present(row);
  });

  app.patch('/api/v2/admin/api-keys/:id', {
    schema: {
      ...schema, operationId: 'updateApiKey', summary: 'Rename an API key',
      description: 'The name is the only thing that changes: the key, its role and scope are fixed (make a new key and revoke this one instead). A revoked key can be renamed too (its record stays for the audit trail).',
      params: IdParams, body: Type.Object({ name: Name }, { additionalProperties: false }),
      response: { 200: ApiKey, ...problemResponses(400, 401, 403, 404, 503) },
    },
  }, async (request) => {
    const principal = principalOf(request);
    return present(await renameApiKeyById(db, request.params.id, request.body.name.trim(), actorOf(principal), clock.now(), scopeOf(principal)));
  });

  app.delete('/api/v2/admin/api-keys/:id', {
    schema: { ...schema, operationId: 'revokeApiKey', summary: 'Revoke an API key', description: 'Every process refuses the key from the next request on (401), and every key it made, and the keys those made, in the same transaction. The records stay for the audit trail.', params: IdParams, response: { 204: Type.Null({ description: 'Revoked' }), ...problemResponses(400, 401, 403, 404, 503) } },
  }, async (request, reply) => {
    const principal = principalOf(request);
    await revokeApiKeyById(db, request.params.id, actorOf(principal), clock.now(), scopeOf(principal));
    return reply.code(204).send(null);
  });
};
