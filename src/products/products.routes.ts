import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { FeatureDeps } from '../deps.js';
import { authenticate } from '../auth/authenticate.js';
import { principalOf } from '../http/principal.js';
import { decodeCursor, encodeCursor, keysetPage } from '../http/cursor.js';
import { problemResponses } from '../http/openapi.js';
import { listProductsOfSeller } from './products.repository.js';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 100;

const ProductSchema = Type.Object(
  {
    id: Type.Integer(),
    sku: Type.String(),
    name: Type.String(),
    price: Type.Union([Type.Number(), Type.Null()]),
    stock: Type.Integer(),
    created_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

const ProductPage = Type.Object(
  {
    items: Type.Array(ProductSchema),
    next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as ?cursor= for the next page; null on the last page.' }),
  },
  { additionalProperties: false },
);

export const productRoutes: FastifyPluginAsyncTypebox<FeatureDeps> = async (app, deps) => {
  app.get(
    '/api/v2/products',
    {
      onRequest: authenticate(deps),
      schema: {
        operationId: 'getProducts',
        tags: ['products'],
        summary: 'List the products of the seller in the access token',
        description: 'The seller comes from the access token only. Pages in id order; follow next_cursor until it is null.',
        security: [{ bearerAuth: [] }],
        querystring: Type.Object({
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE })),
          cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
        }),
        response: { 200: ProductPage, ...problemResponses(400, 401, 503) },
      },
    },
    async (request) => {
      const { sellerId } = principalOf(request);
      const { cursor } = request.query;
      // Ajv fills in the default; the type says optional because the parameter is.
      const limit = request.query.limit ?? DEFAULT_PAGE_SIZE;
      // Product ids are `integer`: a forged id past it is a 400, not an error in SQL.
      const [afterId] = cursor === undefined ? [0] : decodeCursor(cursor, ['int32']);
      // One row more than asked tells whether another page exists.
      const { rows, next } = keysetPage(await listProductsOfSeller(deps.db, sellerId, afterId, limit + 1), limit, (row) => encodeCursor([row.id]));
      return { items: rows.map((row) => ({ ...row, created_at: row.created_at.toISOString() })), next_cursor: next };
    },
  );
};
