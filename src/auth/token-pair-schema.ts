import { Type } from 'typebox';
import { problemResponses, responseHeaders } from '../http/openapi.js';

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
  { additionalProperties: false },
);

/** The optional DPoP proof of login, refresh and mfa/verify (the session is bound to its key). */
export const DpopHeaders = Type.Object({
  dpop: Type.Optional(
    Type.String({
      description: 'A DPoP proof (RFC 9449): a JWT of typ dpop+jwt signed by the client\'s key (ES256, ES384, EdDSA, RS256, PS256), its public key in the header, with jti, htm POST, htu this URL and iat. Binds the session to that key; on refresh of a bound session it is required, from the same key.',
    }),
  ),
});

/** A refused proof is 401 invalid_dpop_proof with the DPoP challenge (WWW-Authenticate). */
export const proofRefusal = () => ({ 401: responseHeaders(problemResponses(401)[401] as object, 'WWW-Authenticate') });
