import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { findUserSummary, listUsers, type UserSummary } from '../accounts/accounts.repository.js';
import { UserName } from '../accounts/user-name.js';
import { createUser, deleteUser, resetPassword, updateUser } from './users.service.js';
import { NewPassword } from '../auth/password-bounds.js';
import { commonPasswordExample } from '../auth/password-strength.js';
import { principalOf } from '../http/principal.js';
import type { FeatureDeps } from '../deps.js';
import { invalidField, notFound } from '../http/errors.js';
import { problemResponses, problemWithExamples } from '../http/openapi.js';
import { MarketplaceCode } from '../http/path-params.js';
import { Id, IdParams, RoleSchema, Timestamp } from './admin-schemas.js';
import { actorOf } from '../accounts/admin-audit.repository.js';
import { ADMIN_SECURITY, requireRole } from './admin-guard.js';
import { ADMIN_PAGE_SIZE, decodeKey, LINK_HEADER, pageOf, PageQuery } from './admin-pages.js';
import { withConstraints } from '../http/db-conflicts.js';

const Role = RoleSchema;

const User = Type.Object(
  {
    id: Type.Integer(),
    username: Type.String(),
    seller_id: Type.Union([Type.Integer(), Type.Null()], { description: 'null only for an admin bound to no seller.' }),
    role: Role,
    marketplace_code: Type.Union([Type.String(), Type.Null()]),
    active: Type.Boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { additionalProperties: false, examples: [{ id: 42, username: 'acme-api', seller_id: 7, role: 'seller', marketplace_code: null, active: true, created_at: '2026-11-27T10:00:00.000Z', updated_at: '2026-11-27T10:00:00.000Z' }] },
);

const present = (row: UserSummary) => ({ ...row, created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString() });
const noUser = () => notFound('There is no such user.');

/** API users, for admins: never a password hash in a response. */
export const adminUserRoutes: FastifyPluginAsyncTypebox<FeatureDeps> = async (app, deps) => {
  const { db, clock } = deps;
  app.addHook('onRequest', requireRole(deps, 'admin'));
  const schema = { tags: ['admin'], security: ADMIN_SECURITY };

  app.post('/api/v2/admin/users', {
    schema: {
      ...schema, operationId: 'adminCreateUser', summary: 'Create a user',
      description: 'seller_id is the seller the login result names (optional for admins); a marketplace user also names its marketplace_code. username is stored in canonical form (NFKC, trimmed): letters, digits and . _ - @ + of one script (no mixed scripts), else 400; a name equal to another in that form, in any case, is 409. password must pass the strength rule (not a common or breached password, a strength score of at least PASSWORD_MIN_SCORE): 400 naming body.password otherwise.',
      body: Type.Object({
        username: UserName,
        password: NewPassword,
        seller_id: Type.Optional(Id),
        role: Type.Optional(Role),
        marketplace_code: Type.Optional(MarketplaceCode),
        active: Type.Optional(Type.Boolean()),
      }, { additionalProperties: false, examples: [{ username: 'acme-api', password: 'quarry lantern juniper solstice', seller_id: 7 }] }),
      response: { 201: User, ...problemResponses(401, 403, 409, 503), 400: problemWithExamples(400, { common_password: commonPasswordExample('body.password') }) },
    },
  }, async (request, reply) => {
    const body = request.body;
    const role = body.role ?? 'seller';
    if ((role === 'marketplace') !== (body.marketplace_code !== undefined)) throw invalidField('body.marketplace_code', 'is required for role marketplace, and only for it');
    if (role !== 'admin' && body.seller_id === undefined) throw invalidField('body.seller_id', 'is required except for admins');
    const input = { username: body.username, password: body.password, sellerId: body.seller_id ?? null, role, marketplaceCode: body.marketplace_code ?? null, active: body.active ?? true };
    const user = await createUser(db, input, actorOf(principalOf(request)), clock.now(), { minScore: deps.config.PASSWORD_MIN_SCORE, field: 'body.password' });
    return reply.code(201).send(present(user));
  });

  app.get('/api/v2/admin/users', {
    schema: { ...schema, operationId: 'adminListUsers', summary: 'List users', description: 'In id order, paginated.', querystring: PageQuery, response: { 200: { ...Type.Array(User), headers: LINK_HEADER }, ...problemResponses(400, 401, 403, 503) } },
  }, async (request, reply) => {
    const limit = request.query.limit ?? ADMIN_PAGE_SIZE;
    const rows = await listUsers(db, decodeKey(request.query.cursor, 0), limit + 1);
    return pageOf(request, reply, rows, limit, (row) => row.id).map(present);
  });

  app.get('/api/v2/admin/users/:id', {
    schema: { ...schema, operationId: 'adminGetUser', summary: 'Get a user', params: IdParams, response: { 200: User, ...problemResponses(400, 401, 403, 404, 503) } },
  }, async (request) => {
    const user = await findUserSummary(db, request.params.id);
    if (!user) throw noUser();
    return present(user);
  });

  app.patch('/api/v2/admin/users/:id', {
    schema: {
      ...schema, operationId: 'adminUpdateUser', summary: 'Rename, deactivate or activate a user',
      description: '`username` renames the user, under the rule of creation (canonical form, one script; 400 otherwise), 409 when another user has that name in any case; sessions stay. `active: false` deactivates the user and revokes all their sessions and refresh tokens; activating again does not revive them. The last active administrator cannot be deactivated (409). Role, seller and marketplace are fixed at creation: they are what the user\'s tokens speak for (make another user instead).',
      params: IdParams, body: Type.Object({ username: Type.Optional(UserName), active: Type.Optional(Type.Boolean()) }, { additionalProperties: false, minProperties: 1 }),
      response: { 200: User, ...problemResponses(400, 401, 403, 404, 409, 503) },
    },
  }, async (request) => {
    const user = await updateUser(db, request.params.id, request.body, actorOf(principalOf(request)), clock.now(), { keepAnAdmin: true });
    if (!user) throw noUser();
    return present(user);
  });

  app.post('/api/v2/admin/users/:id/password', {
    schema: {
      ...schema, operationId: 'adminResetPassword', summary: 'Set a new password for a user', description: 'The password must pass the strength rule (400 naming body.password otherwise). Ends every session of the user.',
      params: IdParams, body: Type.Object({ password: NewPassword }, { additionalProperties: false, examples: [{ password: 'quarry lantern juniper solstice' }] }),
      response: { 204: Type.Null({ description: 'Password set' }), ...problemResponses(401, 403, 404, 503), 400: problemWithExamples(400, { common_password: commonPasswordExample('body.password') }) },
    },
  }, async (request, reply) => {
    if (!(await resetPassword(db, request.params.id, request.body.password, actorOf(principalOf(request)), clock.now(), { minScore: deps.config.PASSWORD_MIN_SCORE, field: 'body.password' }))) throw noUser();
    return reply.code(204).send(null);
  });

  app.delete('/api/v2/admin/users/:id', {
    schema: {
      ...schema, operationId: 'adminDeleteUser', summary: 'Delete a user', description: 'Removes the user with its sessions and refresh tokens; audit records keep its name. The last active administrator cannot be deleted (409).',
      params: IdParams, response: { 204: Type.Null({ description: 'Deleted' }), ...problemResponses(400, 401, 403, 404, 409, 503) },
    },
  }, async (request, reply) => {
    if (!(await withConstraints('The user', () => deleteUser(db, request.params.id, actorOf(principalOf(request)), clock.now(), { keepAnAdmin: true })))) throw noUser();
    return reply.code(204).send(null);
  });
};
