import { Type } from 'typebox';
import { problemWithExamples, responseHeaders } from '../http/openapi.js';
import { replayedProof } from './dpop-replay.js';

/**
 * What the OpenAPI document shows as examples (docs/authentication.md shows the same flows). The
 * access token is cut short; the DPoP proof is a real one (ES256, for POST …/auth/login).
 */
export const EXAMPLE_ACCESS_TOKEN = 'eyJhbGciOiJFUzI1NiIsInR5cCI6ImF0K2p3dCIsImtpZCI6Ii4uLiJ9.eyJzdWIiOiI0MiIsInNpZCI6Ii4uLiJ9.…';
export const EXAMPLE_REFRESH_TOKEN = 'GhAEmPrrOqTnyUR7_9He015pFp5eHFxdMze0rjtAmlo';
export const EXAMPLE_MFA_TOKEN = 'mfa_zA7Ghfeq1FxGYXI5WtFHrZ8nZNo7TtQTKw03sdmso2c';
const EXAMPLE_DPOP_PROOF =
  'eyJhbGciOiJFUzI1NiIsInR5cCI6ImRwb3Arand0IiwiandrIjp7Imt0eSI6IkVDIiwieCI6IjZCN29ua1hhU0JsQU9EMjVfM3A1WFNfeVRaWXVacXB1Z1gyamxpcndhcXMiLCJ5IjoiSW9NVFNVZWIzLWNZY3hleldzaEVkVUJST0pEZ2tBU25lWjRyTVJHQzRrSSIsImNydiI6IlAtMjU2In19' +
  '.eyJodG0iOiJQT1NUIiwiaHR1IjoiaHR0cHM6Ly9wbGF6YS5leGFtcGxlLmNvbS9hcGkvdjIvYXV0aC9sb2dpbiIsImp0aSI6ImUxajNWX2JLaWM4LUxBRUIiLCJpYXQiOjE3OTU2MDAwMDB9' +
  '.y8tTsnCaXPJgz7SpYIi-gSYWid7wc5hBVa3RedntPJvfB5X6diTFdIKDJJHXMjgZb5cvVFUMFFq8diH6K0o6gQ';
const exampleResult = { token: EXAMPLE_ACCESS_TOKEN, refresh_token: EXAMPLE_REFRESH_TOKEN, user_id: 42, user_name: 'acme-api', seller_id: 7, expires_in: 900 };

/** The login result as the API documents it: login, refresh and mfa/verify answer it. */
export const TokenPairSchema = Type.Object(
  {
    token: Type.String({ description: 'Access token (JWT, typ at+jwt, signed with ES256 by default, or EdDSA or RS256: the alg of its key in the JWKS). A DPoP-bound one carries cnf.jkt.' }),
    refresh_token: Type.String({ description: 'Opaque refresh token; single use, rotated at each refresh.' }),
    user_id: Type.Integer(),
    user_name: Type.String(),
    seller_id: Type.Integer({ description: 'The seller in whose context later requests run.' }),
    expires_in: Type.Integer({ description: 'Lifetime of the access token in seconds (900).' }),
    token_type: Type.Enum(['Bearer', 'DPoP'], {
      description: '`DPoP` when the request carried a DPoP proof (or the session was bound by one before): send the access token as `Authorization: DPoP <token>` with a proof, and refresh with a proof of the same key. `Bearer` otherwise.',
    }),
  },
  { additionalProperties: false, examples: [{ ...exampleResult, token_type: 'Bearer' }, { ...exampleResult, token_type: 'DPoP' }] },
);

/** The optional DPoP proof of login, refresh and mfa/verify (the session is bound to its key). */
export const DpopHeaders = Type.Object({
  dpop: Type.Optional(
    Type.String({
      description: 'A DPoP proof (RFC 9449): a JWT of typ dpop+jwt signed by the client\'s key (ES256, ES384, EdDSA, RS256, PS256), its public key in the header, with jti, htm POST, htu this URL and iat. Binds the session to that key; on refresh of a bound session it is required, from the same key.',
      examples: [EXAMPLE_DPOP_PROOF],
    }),
  ),
});

const refusedProof = {
  summary: 'A DPoP proof that is not valid (here: one used before); sent with WWW-Authenticate: DPoP error="invalid_dpop_proof", algs="…"',
  error: replayedProof(),
};

/**
 * A refused proof is 401 invalid_dpop_proof with the DPoP challenge (WWW-Authenticate); `examples`
 * adds those of the route's other 401s (a login's mfa_required).
 */
export const proofRefusal = (examples: Parameters<typeof problemWithExamples>[1] = {}) => ({
  401: responseHeaders(problemWithExamples(401, { ...examples, invalid_dpop_proof: refusedProof }), 'WWW-Authenticate'),
});
