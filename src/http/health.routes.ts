import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { FeatureDeps } from '../deps.js';
import { AppError } from './errors.js';
import { problemResponses } from './openapi.js';

const Status = Type.Object({ status: Type.String() });

export const healthRoutes: FastifyPluginAsyncTypebox<Pick<FeatureDeps, 'db' | 'config'>> = async (app, { db, config }) => {
  app.get('/healthz', { schema: { operationId: 'getHealth', tags: ['operations'], summary: 'The process is alive', response: { 200: Status } } }, async () => ({ status: 'ok' }));

  app.get(
    '/readyz',
    { schema: { operationId: 'getReadiness', tags: ['operations'], summary: 'The database is reachable', response: { 200: Status, ...problemResponses(503) } } },
    async () => {
      try {
        await db.query('SELECT 1');
      } catch (error) {
        throw new AppError('service_unavailable', 'The database is unreachable.', {
          headers: { 'retry-after': String(config.DATABASE_RETRY_AFTER_SECONDS) },
          extensions: { reason: error instanceof Error ? error.constructor.name : 'unknown' },
        });
      }
      return { status: 'ready' };
    },
  );
};
