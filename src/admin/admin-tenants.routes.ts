import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { findConnection, findMarketplace, findSeller, listConnections, listMarketplaces, listSellers } from '../accounts/accounts.repository.js';
import { createConnection, createMarketplace, createSeller, deleteTenant, updateMarketplace, updateSeller } from './tenants.service.js';
import { principalOf } from '../http/principal.js';
import type { FeatureDeps } from '../deps.js';
import { notFound } from '../http/errors.js';
import { problemResponses } from '../http/openapi.js';
import { MarketplaceCode } from '../http/path-params.js';
import { Id, IdParams, Name, Timestamp } from './admin-schemas.js';
import { actorOf } from '../accounts/admin-audit.repository.js';
import { ADMIN_SECURITY, requireRole } from './admin-guard.js';
import { ADMIN_PAGE_SIZE, decodeKey, LINK_HEADER, pageOf, PageQuery } from './admin-pages.js';

const Active = Type.Boolean({ description: 'False while deactivated: its users and API keys are refused (401), its events refused (409 `tenant_inactive`), its webhooks paused.' });
const Marketplace = Type.Object({ code: Type.String(), name: Type.String(), active: Active, created_at: Timestamp }, { additionalProperties: false });
const Seller = Type.Object({ id: Type.Integer(), name: Type.String(), active: Active, created_at: Timestamp }, { additionalProperties: false });
/** Like PATCH /api/v2/admin/users/{id} {active}: the flag is a field of the record. */
const TenantChange = Type.Object(
  {
    name: Type.Optional(Name),
    active: Type.Optional(Type.Boolean({ description: '`false` deactivates: every session of its users is revoked, its users and API keys are refused from the next request on (401), events for it are refused (409 `tenant_inactive`) and its webhooks are paused (reason `tenant_deactivated`). `true` activates it again: webhooks resume, held deliveries go out; revoked sessions stay revoked. Admins are never affected.' })),
  },
  { additionalProperties: false, minProperties: 1 },
);
const TENANT_CHANGE_DOC = 'Renames it (`name`) and/or deactivates or activates it (`active`, see the field). Audited as `update`, `deactivate` or `activate`.';
const Connection = Type.Object({ id: Type.Integer(), seller_id: Type.Integer(), marketplace_code: Type.String(), created_at: Timestamp }, { additionalProperties: false });

const iso = <T extends { created_at: Date }>(row: T) => ({ ...row, created_at: row.created_at.toISOString() });
const TAGS = ['admin'];

/** Marketplaces, sellers and their connections, for admins (users or API keys). */
export const adminTenantRoutes: FastifyPluginAsyncTypebox<FeatureDeps> = async (app, deps) => {
  const { db, clock } = deps;
  app.addHook('onRequest', requireRole(deps, 'admin'));
  const schema = { tags: TAGS, security: ADMIN_SECURITY };

  // Marketplaces
  app.post('/api/v2/admin/marketplaces', {
    schema: { ...schema, operationId: 'adminCreateMarketplace', summary: 'Create a marketplace', body: Type.Object({ code: MarketplaceCode, name: Name }, { additionalProperties: false }), response: { 201: Marketplace, ...problemResponses(400, 401, 403, 409, 503) } },
  }, async (request, reply) => {
    const row = await createMarketplace(db, request.body.code, request.body.name.trim(), actorOf(principalOf(request)), clock.now());
    return reply.code(201).send(iso(row));
  });
  app.get('/api/v2/admin/marketplaces', {
    schema: { ...schema, operationId: 'adminListMarketplaces', summary: 'List marketplaces', description: 'In code order, paginated.', querystring: PageQuery, response: { 200: { ...Type.Array(Marketplace), headers: LINK_HEADER }, ...problemResponses(400, 401, 403, 503) } },
  }, async (request, reply) => {
    const limit = request.query.limit ?? ADMIN_PAGE_SIZE;
    const rows = await listMarketplaces(db, decodeKey(request.query.cursor, ''), limit + 1);
    return pageOf(request, reply, rows, limit, (row) => row.code).map(iso);
  });
  const CodeParams = Type.Object({ code: MarketplaceCode });
  app.get('/api/v2/admin/marketplaces/:code', {
    schema: { ...schema, operationId: 'adminGetMarketplace', summary: 'Get a marketplace', params: CodeParams, response: { 200: Marketplace, ...problemResponses(400, 401, 403, 404, 503) } },
  }, async (request) => iso((await findMarketplace(db, request.params.code)) ?? throwNotFound('marketplace')));
  app.patch('/api/v2/admin/marketplaces/:code', {
    schema: { ...schema, operationId: 'adminUpdateMarketplace', summary: 'Rename, deactivate or activate a marketplace', description: TENANT_CHANGE_DOC, params: CodeParams, body: TenantChange, response: { 200: Marketplace, ...problemResponses(400, 401, 403, 404, 503) } },
  }, async (request) => iso((await updateMarketplace(db, request.params.code, changesOf(request.body), actorOf(principalOf(request)), clock.now())) ?? throwNotFound('marketplace')));
  app.delete('/api/v2/admin/marketplaces/:code', {
    schema: { ...schema, operationId: 'adminDeleteMarketplace', summary: 'Delete an unused marketplace', description: '409 while connections, users, webhooks, events or API keys refer to it.', params: CodeParams, response: { 204: Type.Null({ description: 'Deleted' }), ...problemResponses(400, 401, 403, 404, 409, 503) } },
  }, async (request, reply) => {
    if (!(await deleteTenant(db, 'marketplace', request.params.code, actorOf(principalOf(request)), clock.now()))) throwNotFound('marketplace');
    return reply.code(204).send(null);
  });

  // Sellers
  app.post('/api/v2/admin/sellers', {
    schema: { ...schema, operationId: 'adminCreateSeller', summary: 'Create a seller', body: Type.Object({ id: Id, name: Name }, { additionalProperties: false }), response: { 201: Seller, ...problemResponses(400, 401, 403, 409, 503) } },
  }, async (request, reply) => reply.code(201).send(iso(await createSeller(db, request.body.id, request.body.name.trim(), actorOf(principalOf(request)), clock.now()))));
  app.get('/api/v2/admin/sellers', {
    schema: { ...schema, operationId: 'adminListSellers', summary: 'List sellers', description: 'In id order, paginated.', querystring: PageQuery, response: { 200: { ...Type.Array(Seller), headers: LINK_HEADER }, ...problemResponses(400, 401, 403, 503) } },
  }, async (request, reply) => {
    const limit = request.query.limit ?? ADMIN_PAGE_SIZE;
    const rows = await listSellers(db, decodeKey(request.query.cursor, 0), limit + 1);
    return pageOf(request, reply, rows, limit, (row) => row.id).map(iso);
  });
  app.get('/api/v2/admin/sellers/:id', {
    schema: { ...schema, operationId: 'adminGetSeller', summary: 'Get a seller', params: IdParams, response: { 200: Seller, ...problemResponses(400, 401, 403, 404, 503) } },
  }, async (request) => iso((await findSeller(db, request.params.id)) ?? throwNotFound('seller')));
  app.patch('/api/v2/admin/sellers/:id', {
    schema: { ...schema, operationId: 'adminUpdateSeller', summary: 'Rename, deactivate or activate a seller', description: TENANT_CHANGE_DOC, params: IdParams, body: TenantChange, response: { 200: Seller, ...problemResponses(400, 401, 403, 404, 503) } },
  }, async (request) => iso((await updateSeller(db, request.params.id, changesOf(request.body), actorOf(principalOf(request)), clock.now())) ?? throwNotFound('seller')));
  app.delete('/api/v2/admin/sellers/:id', {
    schema: { ...schema, operationId: 'adminDeleteSeller', summary: 'Delete an unused seller', description: '409 while connections, users, products or API keys refer to it.', params: IdParams, response: { 204: Type.Null({ description: 'Deleted' }), ...problemResponses(400, 401, 403, 404, 409, 503) } },
  }, async (request, reply) => {
    if (!(await deleteTenant(db, 'seller', request.params.id, actorOf(principalOf(request)), clock.now()))) throwNotFound('seller');
    return reply.code(204).send(null);
  });

  // Connections
  app.post('/api/v2/admin/connections', {
    schema: { ...schema, operationId: 'adminCreateConnection', summary: 'Connect a seller to a marketplace', body: Type.Object({ seller_id: Id, marketplace_code: MarketplaceCode }, { additionalProperties: false }), response: { 201: Connection, ...problemResponses(400, 401, 403, 409, 503) } },
  }, async (request, reply) => reply.code(201).send(iso(await createConnection(db, request.body.seller_id, request.body.marketplace_code, actorOf(principalOf(request)), clock.now()))));
  app.get('/api/v2/admin/connections', {
    schema: {
      ...schema, operationId: 'adminListConnections', summary: 'List connections', description: 'In id order, paginated; optionally of one seller or marketplace.',
      querystring: Type.Object({ ...PageQuery.properties, seller_id: Type.Optional(Id), marketplace_code: Type.Optional(MarketplaceCode) }, { additionalProperties: false }),
      response: { 200: { ...Type.Array(Connection), headers: LINK_HEADER }, ...problemResponses(400, 401, 403, 503) },
    },
  }, async (request, reply) => {
    const limit = request.query.limit ?? ADMIN_PAGE_SIZE;
    const rows = await listConnections(db, decodeKey(request.query.cursor, 0), limit + 1, { sellerId: request.query.seller_id, marketplaceCode: request.query.marketplace_code });
    return pageOf(request, reply, rows, limit, (row) => row.id).map(iso);
  });
  app.get('/api/v2/admin/connections/:id', {
    schema: { ...schema, operationId: 'adminGetConnection', summary: 'Get a connection', params: IdParams, response: { 200: Connection, ...problemResponses(400, 401, 403, 404, 503) } },
  }, async (request) => iso((await findConnection(db, request.params.id)) ?? throwNotFound('connection')));
  app.delete('/api/v2/admin/connections/:id', {
    schema: { ...schema, operationId: 'adminDeleteConnection', summary: 'Delete a connection', description: "409 while webhooks depend on it: the seller's own webhooks in that marketplace, or the marketplace's webhooks for that seller.", params: IdParams, response: { 204: Type.Null({ description: 'Deleted' }), ...problemResponses(400, 401, 403, 404, 409, 503) } },
  }, async (request, reply) => {
    if (!(await deleteTenant(db, 'connection', request.params.id, actorOf(principalOf(request)), clock.now()))) throwNotFound('connection');
    return reply.code(204).send(null);
  });
};

function changesOf(body: { name?: string; active?: boolean }) {
  return { name: body.name?.trim(), active: body.active };
}

function throwNotFound(what: string): never {
  throw notFound(`There is no such ${what}.`);
}
