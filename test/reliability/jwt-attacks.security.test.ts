import assert from 'node:assert/strict';
import { createHmac, createPublicKey, generateKeyPairSync, randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { decodeJwt, importPKCS8, SignJWT, type JWTPayload } from 'jose';
import { migrate } from '../../src/db/migrate.js';
import { createFreshDatabase, type FreshDatabase } from '../../src/testing/fresh-database.js';
import { call, login, report, seedTenant, type Tokens } from '../../src/testing/plaza-api.js';
import { killAllPlaza, sharedKeyEnv, startPlaza, type PlazaProcess } from '../../src/testing/plaza-process.js';

const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

let database: FreshDatabase;
let plaza: PlazaProcess;
let keys: Record<string, string>;
let tokens: Tokens;
let claims: JWTPayload;

before(async () => {
  database = await createFreshDatabase();
  await migrate(database.db);
  const seller = await seedTenant(database.db, { sellerId: 1, marketplaceCode: 'MKT' });
  keys = sharedKeyEnv();
  plaza = await startPlaza({ DATABASE_URL: database.url, ...keys }, { role: 'api' });
  tokens = await login(plaza.url, seller.username, seller.password);
  claims = decodeJwt(tokens.token);
});
after(async () => {
  await killAllPlaza();
  await database?.drop();
});

const PROTECTED = [
  ['GET', '/api/v2/products'],
  ['GET', '/v1/MKT/webhooks'],
  ['GET', '/api/v2/auth/sessions'],
] as const;

async function statusesFor(authorization: string | undefined): Promise<{ status: number; code: unknown }[]> {
  return Promise.all(
    PROTECTED.map(async ([method, path]) => {
      const response = await call(plaza.url, method, path, { headers: authorization === undefined ? {} : { authorization } });
      return { status: response.status, code: (response.json as { code?: unknown } | undefined)?.code };
    }),
  );
}

/** A token signed with the service's own key, with the given header and claims changed. */
async function signed(header: Record<string, unknown>, changes: JWTPayload, key = keys.JWT_PRIVATE_KEY!, alg = 'ES256'): Promise<string> {
  const payload: JWTPayload = { ...claims, jti: randomUUID(), ...changes };
  for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name];
  return new SignJWT(payload).setProtectedHeader({ alg, typ: 'at+jwt', kid: keys.JWT_KEY_ID, ...header } as { alg: string }).sign(await importPKCS8(key, alg));
}

const now = () => Math.floor(Date.now() / 1000);

test('a genuine token is accepted on every protected route (the control that lets the matrix fail)', async () => {
  for (const result of await statusesFor(`Bearer ${tokens.token}`)) assert.equal(result.status, 200);
  for (const result of await statusesFor(`Bearer ${await signed({}, {})}`)) assert.equal(result.status, 200, 'a token forged with the real key and real claims passes: the matrix below changes one thing at a time');
});

test('JWT attack matrix: every forged, altered, expired or misplaced token gets 401', { timeout: 60_000 }, async () => {
  const [headerPart, payloadPart, signaturePart] = tokens.token.split('.') as [string, string, string];
  const publicPem = createPublicKey(keys.JWT_PRIVATE_KEY!).export({ format: 'pem', type: 'spki' }).toString();
  const publicJwk = createPublicKey(keys.JWT_PRIVATE_KEY!).export({ format: 'jwk' });
  const hs256 = (secret: string | Buffer, header: Record<string, unknown> = {}) => {
    const head = b64({ alg: 'HS256', typ: 'at+jwt', kid: keys.JWT_KEY_ID, ...header });
    const body = b64({ ...claims, jti: randomUUID() });
    return `${head}.${body}.${createHmac('sha256', secret).update(`${head}.${body}`).digest('base64url')}`;
  };
  const otherP256 = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  const otherEd25519 = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();

  const attacks: Record<string, string | undefined> = {
    'no Authorization header': undefined,
    'empty header': '',
    'Bearer with nothing': 'Bearer ',
    'Bearer alone': 'Bearer',
    'Basic scheme': `Basic ${Buffer.from('user:pass').toString('base64')}`,
    'token without scheme': tokens.token,
    'alg none, no signature': `Bearer ${b64({ alg: 'none', typ: 'at+jwt', kid: keys.JWT_KEY_ID })}.${payloadPart}.`,
    'alg none, original signature': `Bearer ${b64({ alg: 'none', typ: 'at+jwt', kid: keys.JWT_KEY_ID })}.${payloadPart}.${signaturePart}`,
    'alg NONE upper case': `Bearer ${b64({ alg: 'NONE', typ: 'at+jwt', kid: keys.JWT_KEY_ID })}.${payloadPart}.`,
    'HS256 keyed with the public key PEM': `Bearer ${hs256(publicPem)}`,
    'HS256 keyed with the public key bytes': `Bearer ${hs256(Buffer.from(publicJwk.x!, 'base64url'))}`,
    'HS256 keyed with the public JWK': `Bearer ${hs256(JSON.stringify(publicJwk))}`,
    'RS256 with an attacker key': `Bearer ${await signed({}, {}, rsa, 'RS256')}`,
    'EdDSA with an attacker key': `Bearer ${await signed({}, {}, otherEd25519, 'EdDSA')}`,
    'header alg changed to EdDSA, signature kept': `Bearer ${b64({ alg: 'EdDSA', typ: 'at+jwt', kid: keys.JWT_KEY_ID })}.${payloadPart}.${signaturePart}`,
    'header alg changed to ES384, signature kept': `Bearer ${b64({ alg: 'ES384', typ: 'at+jwt', kid: keys.JWT_KEY_ID })}.${payloadPart}.${signaturePart}`,
    'tampered payload (seller_id 2)': `Bearer ${headerPart}.${b64({ ...claims, seller_id: 2 })}.${signaturePart}`,
    'tampered payload (role admin)': `Bearer ${headerPart}.${b64({ ...claims, role: 'admin' })}.${signaturePart}`,
    'tampered header (kid)': `Bearer ${b64({ alg: 'ES256', typ: 'at+jwt', kid: 'other' })}.${payloadPart}.${signaturePart}`,
    'wrong key, same kid': `Bearer ${await signed({}, {}, otherP256)}`,
    'wrong typ JWT': `Bearer ${await signed({ typ: 'JWT' }, {})}`,
    'typ of a refresh token': `Bearer ${await signed({ typ: 'rt+jwt' }, {})}`,
    'no typ': `Bearer ${await signed({ typ: undefined }, {})}`,
    'wrong issuer': `Bearer ${await signed({}, { iss: 'evil' })}`,
    'wrong audience': `Bearer ${await signed({}, { aud: 'other-api' })}`,
    'expired': `Bearer ${await signed({}, { iat: now() - 2000, exp: now() - 1000 })}`,
    'not yet valid (nbf)': `Bearer ${await signed({}, { nbf: now() + 3600 })}`,
    'no exp': `Bearer ${await signed({}, { exp: undefined })}`,
    'no sub': `Bearer ${await signed({}, { sub: undefined })}`,
    'unknown kid': `Bearer ${await signed({ kid: 'unknown-kid' }, {})}`,
    'no kid': `Bearer ${await signed({ kid: undefined }, {})}`,
    'jku pointing elsewhere': `Bearer ${await signed({ kid: 'x', jku: 'http://127.0.0.1:1/jwks.json' }, {})}`,
    'embedded jwk': `Bearer ${await signed({ kid: undefined, jwk: createPublicKey(otherP256).export({ format: 'jwk' }) }, {}, otherP256)}`,
    'refresh token as bearer': `Bearer ${tokens.refresh_token}`,
    'truncated signature': `Bearer ${tokens.token.slice(0, -6)}`,
    'truncated to header and payload': `Bearer ${headerPart}.${payloadPart}`,
    'header only': `Bearer ${headerPart}`,
    'signature of another token': `Bearer ${headerPart}.${payloadPart}.${(await signed({}, { seller_id: 2 })).split('.')[2]}`,
    'garbage': 'Bearer a.b.c',
    'huge token': `Bearer ${'a'.repeat(6000)}.${'b'.repeat(6000)}.${'c'.repeat(100)}`,
  };
  const failures: string[] = [];
  let requests = 0;
  for (const [name, authorization] of Object.entries(attacks)) {
    for (const [i, result] of (await statusesFor(authorization)).entries()) {
      requests++;
      if (result.status !== 401 || result.code !== 'unauthorized') failures.push(`${name} on ${PROTECTED[i]!.join(' ')}: ${result.status} ${String(result.code)}`);
    }
  }
  assert.deepEqual(failures, []);
  report('JWT attack matrix', { attacks: Object.keys(attacks).length, requests, accepted: failures.length });
});
