import { Type } from 'typebox';

/** The login result as the API documents it: login, refresh and mfa/verify answer it. */
export const TokenPairSchema = Type.Object(
  {
    token: Type.String({ description: 'Access token (JWT, EdDSA, typ at+jwt).' }),
    refresh_token: Type.String({ description: 'Opaque refresh token; single use, rotated at each refresh.' }),
    user_id: Type.Integer(),
    user_name: Type.String(),
    seller_id: Type.Integer({ description: 'The seller in whose context later requests run.' }),
    expires_in: Type.Integer({ description: 'Lifetime of the access token in seconds (900).' }),
  },
  { additionalProperties: false },
);
