import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import type { JWK } from 'jose';
import type { FeatureDeps } from '../deps.js';

const common = {
  kid: Type.String({ description: 'Key id: the kid in the header of the tokens this key signed.' }),
  use: Type.Literal('sig'),
};
// One shape per key type (RFC 7518 §6, RFC 8037), each with the one algorithm it verifies.
const EcJwk = Type.Object(
  { kty: Type.Literal('EC'), crv: Type.Literal('P-256'), x: Type.String(), y: Type.String(), alg: Type.Literal('ES256'), ...common },
  { additionalProperties: false, title: 'EC P-256 key (ES256)' },
);
const OkpJwk = Type.Object(
  { kty: Type.Literal('OKP'), crv: Type.Literal('Ed25519'), x: Type.String(), alg: Type.Literal('EdDSA'), ...common },
  { additionalProperties: false, title: 'Ed25519 key (EdDSA)' },
);
const RsaJwk = Type.Object(
  { kty: Type.Literal('RSA'), n: Type.String({ description: 'Modulus, at least 2048 bits.' }), e: Type.String(), alg: Type.Literal('RS256'), ...common },
  { additionalProperties: false, title: 'RSA key (RS256)' },
);
const Jwk = Type.Union([EcJwk, OkpJwk, RsaJwk]);

/**
 * Only a key type's public members, whatever else a configured JWK carried. Every key in the set
 * came through jwt-algorithms.ts: an EC key is a P-256 key for ES256, an OKP key an Ed25519 key.
 */
function publicForm(jwk: JWK): Static<typeof Jwk> {
  const kid = String(jwk.kid);
  switch (jwk.kty) {
    case 'EC':
      return { kty: 'EC', crv: 'P-256', x: String(jwk.x), y: String(jwk.y), alg: 'ES256', kid, use: 'sig' };
    case 'OKP':
      return { kty: 'OKP', crv: 'Ed25519', x: String(jwk.x), alg: 'EdDSA', kid, use: 'sig' };
    default:
      return { kty: 'RSA', n: String(jwk.n), e: String(jwk.e), alg: 'RS256', kid, use: 'sig' };
  }
}

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
          'Every key that may have signed a still-valid access token, each with its algorithm (ES256, EdDSA or RS256; keys of several algorithms may be listed during a rotation), and a rotated-in key from JWKS_MAX_AGE_SECONDS + JWT_VERIFIER_COOLDOWN_SECONDS + 60 s before it starts signing: a copy cached for its max-age, or a verifier that refetches on an unknown kid at most every JWT_VERIFIER_COOLDOWN_SECONDS, always holds the key of a new token.',
        response: { 200: Type.Object({ keys: Type.Array(Jwk) }, { additionalProperties: false }) },
      },
    },
    async (_request, reply) => {
      // The answer is the same for everyone and holds no secret: shared caches may keep it, for the
      // max-age that the timeline counts with (jwt-key-timeline.ts). A view of the keys that is too
      // old and cannot be read again (database unreachable) may lack a new key: answered, not cached.
      const fresh = keys.ring ? await keys.ring.freshForPublishing(clock.now()) : true;
      reply.header('cache-control', fresh ? `public, max-age=${config.JWKS_MAX_AGE_SECONDS}` : 'no-store');
      return { keys: keys.jwks.map(publicForm) };
    },
  );
};
