import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { FeatureDeps } from '../deps.js';

const Jwk = Type.Object(
  {
    kty: Type.String({ examples: ['OKP'] }),
    crv: Type.String({ examples: ['Ed25519'] }),
    x: Type.String(),
    kid: Type.String(),
    alg: Type.String({ examples: ['EdDSA'] }),
    use: Type.String({ examples: ['sig'] }),
  },
  { additionalProperties: false },
);

/**
 * The public keys that verify Plaza's access tokens (RFC 7517), for other services: a verifier
 * such as jose's createRemoteJWKSet finds a token's key by kid, and fetches again when it meets a
 * kid it does not know, which is how a rotation reaches it.
 */
export const jwksRoutes: FastifyPluginAsyncTypebox<FeatureDeps> = async (app, { keys, config, clock }) => {
  app.get(
    '/.well-known/jwks.json',
    {
      schema: {
        tags: ['auth'],
        operationId: 'getJwks',
        summary: 'Public keys of the access tokens (JWKS)',
        description:
          'Every key that may have signed a still-valid access token, and a rotated-in key from JWKS_MAX_AGE_SECONDS + JWT_VERIFIER_COOLDOWN_SECONDS + 60 s before it starts signing: a copy cached for its max-age, or a verifier that refetches on an unknown kid at most every JWT_VERIFIER_COOLDOWN_SECONDS, always holds the key of a new token.',
        response: { 200: Type.Object({ keys: Type.Array(Jwk) }, { additionalProperties: false }) },
      },
    },
    async (_request, reply) => {
      // The answer is the same for everyone and holds no secret: shared caches may keep it, for the
      // max-age that the timeline counts with (jwt-key-timeline.ts). A view of the keys that is too
      // old and cannot be read again (database unreachable) may lack a new key: answered, not cached.
      const fresh = keys.ring ? await keys.ring.freshForPublishing(clock.now()) : true;
      reply.header('cache-control', fresh ? `public, max-age=${config.JWKS_MAX_AGE_SECONDS}` : 'no-store');
      // Only the public members, whatever else a configured JWK carried.
      return { keys: keys.jwks.map((jwk) => ({ kty: String(jwk.kty), crv: String(jwk.crv), x: String(jwk.x), kid: String(jwk.kid), alg: String(jwk.alg), use: String(jwk.use) })) };
    },
  );
};
