import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FeatureDeps } from '../app.js';

// PLACEHOLDER: replaced by the feature's implementation.
export const webhookRoutes: FastifyPluginAsyncTypebox<FeatureDeps> = async () => {};
