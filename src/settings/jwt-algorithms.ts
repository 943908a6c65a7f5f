/**
 * The algorithms access tokens may be signed with. Each key has exactly one, fixed by its type
 * (EC P-256: ES256, Ed25519: EdDSA, RSA: RS256) and recorded with it (the stored and published
 * JWK's `alg`); a token is verified with the algorithm of the key its kid names, never another.
 * ES256 is the default: every common JWT library verifies it (jsonwebtoken and get-jwks cannot
 * read an Ed25519 key), and its keys and signatures are small and cheap, unlike RSA's.
 */
export const JWT_ALGORITHMS = ['ES256', 'EdDSA', 'RS256'] as const;
export type JwtAlgorithm = (typeof JWT_ALGORITHMS)[number];
export const DEFAULT_JWT_ALGORITHM: JwtAlgorithm = 'ES256';

export const isJwtAlgorithm = (value: unknown): value is JwtAlgorithm => (JWT_ALGORITHMS as readonly unknown[]).includes(value);
