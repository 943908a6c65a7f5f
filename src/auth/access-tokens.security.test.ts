import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { exportJWK, exportSPKI, generateKeyPair, importPKCS8, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import { buildApp, type App } from '../app.js';
import { ManualClock } from '../clock.js';
import { loadConfig } from '../config.js';
import { loadKeys } from '../keys.js';
import { seedUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import { getProducts, loginOk } from '../testing/auth.js';

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('access token verification rejects forgeries with 401 unauthorized', () => {
  let ctx: TestContext;
  let now: number;
  before(async () => {
    ctx = await createTestApp();
  });
  after(() => ctx.close());

  const kid = () => ctx.keys.signing.kid;
  const claims = (overrides: Record<string, unknown> = {}): JWTPayload => {
    now = Math.floor(ctx.clock.now().getTime() / 1000);
    return {
      iss: ctx.config.JWT_ISSUER,
      aud: ctx.config.JWT_AUDIENCE,
      sub: '1',
      sid: randomUUID(),
      seller_id: 1,
      role: 'seller',
      iat: now,
      exp: now + 900,
      jti: randomUUID(),
      ...overrides,
    };
  };
  // The test app's key is for the default algorithm (ES256); each key signs with its own.
  const sign = (payload: JWTPayload, header: Record<string, unknown> = {}, key: CryptoKey | Uint8Array = ctx.keys.signing.privateKey, alg: string = ctx.keys.signing.alg) =>
    new SignJWT(payload).setProtectedHeader({ alg, typ: 'at+jwt', kid: kid(), ...header }).sign(key);

  const assertRejected = async (token: string, label: string) => {
    const response = await getProducts(ctx, token);
    assert.equal(response.statusCode, 401, label);
    assert.equal(response.json().code, 'unauthorized', label);
    assert.match(String(response.headers['www-authenticate']), /^Bearer/, label);
  };

  test('the baseline forged with the real key is accepted (the rejections below are not vacuous)', async () => {
    assert.equal((await getProducts(ctx, await sign(claims()))).statusCode, 200);
  });

  test('alg none', async () => {
    for (const alg of ['none', 'None', 'NONE']) {
      await assertRejected(`${b64({ alg, typ: 'at+jwt', kid: kid() })}.${b64(claims())}.`, alg);
    }
  });

  test('HS256 signed with the public key bytes (algorithm confusion)', async () => {
    const publicKey = ctx.keys.verification.get(kid())!.key;
    const pem = await exportSPKI(publicKey);
    const jwk = await exportJWK(publicKey);
    for (const secret of [new TextEncoder().encode(pem), new TextEncoder().encode(JSON.stringify(jwk)), Buffer.from(jwk.x!, 'base64url')]) {
      for (const alg of ['HS256', 'HS512']) await assertRejected(await sign(claims(), {}, secret, alg), alg);
    }
  });

  test('other asymmetric algorithms with the right kid', async () => {
    for (const alg of ['RS256', 'PS256', 'ES256', 'ES384', 'EdDSA']) {
      const { privateKey } = await generateKeyPair(alg);
      await assertRejected(await sign(claims(), {}, privateKey, alg), alg);
    }
  });

  test('wrong or missing typ', async () => {
    await assertRejected(await sign(claims(), { typ: 'JWT' }), 'typ JWT');
    await assertRejected(await sign(claims(), { typ: 'refresh+jwt' }), 'typ refresh');
    const noTyp = await new SignJWT(claims()).setProtectedHeader({ alg: ctx.keys.signing.alg, kid: kid() }).sign(ctx.keys.signing.privateKey);
    await assertRejected(noTyp, 'no typ');
  });

  test('wrong iss or aud', async () => {
    await assertRejected(await sign(claims({ iss: 'someone-else' })), 'iss');
    await assertRejected(await sign(claims({ aud: 'other-api' })), 'aud');
    await assertRejected(await sign(claims({ iss: undefined })), 'no iss');
  });

  test('expired beyond the leeway; within it still accepted', async () => {
    const leeway = ctx.config.JWT_CLOCK_TOLERANCE_SECONDS;
    const base = claims();
    await assertRejected(await sign({ ...base, iat: now - 2000, exp: now - leeway - 1 }), 'expired');
    assert.equal((await getProducts(ctx, await sign({ ...base, iat: now - 900, exp: now - leeway + 1 }))).statusCode, 200);
    await assertRejected(await sign({ ...base, exp: undefined }), 'no exp');
  });

  test('iat in the future beyond the leeway (issue 13 item 9); within it still accepted', async () => {
    const leeway = ctx.config.JWT_CLOCK_TOLERANCE_SECONDS;
    const base = claims();
    await assertRejected(await sign({ ...base, iat: now + leeway + 1, exp: now + leeway + 1 + 900 }), 'iat ahead');
    await assertRejected(await sign({ ...base, iat: now + 86_400 * 365, exp: now + 86_400 * 365 + 900 }), 'iat a year ahead');
    assert.equal((await getProducts(ctx, await sign({ ...base, iat: now + leeway, exp: now + leeway + 900 }))).statusCode, 200);
  });

  test('a lifetime longer than ACCESS_TOKEN_TTL_SECONDS (issue 13 item 9)', async () => {
    const ttl = ctx.config.ACCESS_TOKEN_TTL_SECONDS;
    const base = claims();
    await assertRejected(await sign({ ...base, exp: now + 10 * 365 * 86_400 }), 'exp ten years ahead');
    await assertRejected(await sign({ ...base, exp: now + ttl + 1 }), 'one second too long');
    assert.equal((await getProducts(ctx, await sign({ ...base, exp: now + ttl }))).statusCode, 200);
  });

  test('nbf in the future', async () => {
    await assertRejected(await sign(claims({ nbf: Math.floor(ctx.clock.now().getTime() / 1000) + 60 })), 'nbf');
  });

  test('bad signature, tampered payload', async () => {
    const token = await sign(claims());
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const flipped = signature.slice(0, 10) + (signature[10] === 'A' ? 'B' : 'A') + signature.slice(11);
    await assertRejected(`${header}.${payload}.${flipped}`, 'flipped signature');
    const tampered = { ...JSON.parse(Buffer.from(payload, 'base64url').toString()), seller_id: 2 };
    await assertRejected(`${header}.${b64(tampered)}.${signature}`, 'tampered payload');
    const otherKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    await assertRejected(await sign(claims(), {}, await importPKCS8(otherKey, 'ES256')), 'another P-256 key under our kid');
  });

  test('unknown or missing kid', async () => {
    await assertRejected(await sign(claims(), { kid: 'unknown-kid' }), 'unknown kid');
    const noKid = await new SignJWT(claims()).setProtectedHeader({ alg: ctx.keys.signing.alg, typ: 'at+jwt' }).sign(ctx.keys.signing.privateKey);
    await assertRejected(noKid, 'no kid');
  });

  test('malformed claims signed with the real key', async () => {
    await assertRejected(await sign(claims({ sid: 'not-a-uuid' })), 'sid');
    await assertRejected(await sign(claims({ seller_id: '1' })), 'seller_id string');
    await assertRejected(await sign(claims({ sub: 'admin' })), 'sub');
    // Numbers the database cannot hold were a 500 (the tenant check's query failed on them).
    await assertRejected(await sign(claims({ seller_id: 2 ** 40 })), 'seller_id past int32');
    await assertRejected(await sign(claims({ seller_id: -1 })), 'negative seller_id');
    await assertRejected(await sign(claims({ sub: String(2 ** 40) })), 'sub past int32');
    await assertRejected(await sign(claims({ sub: 1 })), 'sub as a number');
    await assertRejected(await sign(claims({ sub: '01' })), 'sub with a leading zero');
    await assertRejected(await sign(claims({ role: 'root' })), 'role');
    await assertRejected(await sign(claims({ jti: undefined })), 'no jti');
  });

  test('a refresh token, truncated and empty tokens, other schemes', async () => {
    const user = await seedUser(ctx.db);
    const pair = await loginOk(ctx, user);
    assert.equal((await getProducts(ctx, pair.token)).statusCode, 200);
    await assertRejected(pair.refresh_token, 'refresh token');
    await assertRejected(pair.token.slice(0, -5), 'truncated signature');
    await assertRejected(pair.token.split('.').slice(0, 2).join('.') + '.', 'no signature');
    await assertRejected(pair.token.slice(0, pair.token.indexOf('.') + 8), 'truncated payload');
    for (const authorization of ['Bearer ', 'Bearer', '', `Basic ${pair.token}`, `Bearer  ${pair.token}`, `${pair.token}`]) {
      const response = await ctx.app.inject({ method: 'GET', url: '/api/v2/products', headers: { authorization } });
      assert.equal(response.statusCode, 401, JSON.stringify(authorization));
      assert.equal(response.json().code, 'unauthorized');
    }
    assert.equal((await ctx.app.inject({ method: 'GET', url: '/api/v2/products' })).statusCode, 401);
  });
});

// Ed25519 keys from the environment, as before ES256 became the default: they keep signing with EdDSA.
describe('key rotation: several verification keys at once', () => {
  let app: App;
  let db: TestDatabase;
  let oldPrivateKey: CryptoKey;
  const clock = new ManualClock(new Date());

  before(async () => {
    const old = generateKeyPairSync('ed25519');
    oldPrivateKey = await importPKCS8(old.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), 'EdDSA');
    const config = loadConfig({
      LOG_LEVEL: 'silent',
      JWT_PRIVATE_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
      JWT_KEY_ID: 'key-2026',
      SECRETS_KEY: randomBytes(32).toString('base64'),
      JWT_VERIFICATION_KEYS: JSON.stringify([{ ...old.publicKey.export({ format: 'jwk' }), kid: 'key-2025' }]),
    });
    db = await createTestDatabase();
    app = await buildApp({ config, db, keys: await loadKeys(config), clock, logger: false });
  });
  after(async () => {
    await app.close();
    await db.close();
  });

  const tokenSignedBy = (key: CryptoKey, kid: string) => {
    const iat = Math.floor(clock.now().getTime() / 1000);
    return new SignJWT({ sid: randomUUID(), seller_id: 1, role: 'seller' })
      .setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt', kid })
      .setIssuer('plaza')
      .setAudience('plaza-api')
      .setSubject('1')
      .setIssuedAt(iat)
      .setExpirationTime(iat + 900)
      .setJti(randomUUID())
      .sign(key);
  };
  const products = (token: string) => app.inject({ method: 'GET', url: '/api/v2/products', headers: { authorization: `Bearer ${token}` } });

  test('tokens of the current and of the rotated-out key are both accepted', async () => {
    const user = await seedUser(db);
    const login = await app.inject({ method: 'POST', url: '/api/v2/auth/login', payload: { username: user.username, password: user.password } });
    const current = login.json().token as string;
    assert.equal(JSON.parse(Buffer.from(current.split('.')[0]!, 'base64url').toString()).kid, 'key-2026');
    assert.equal((await products(current)).statusCode, 200);
    assert.equal((await products(await tokenSignedBy(oldPrivateKey, 'key-2025'))).statusCode, 200);
  });

  test('a key is only valid under its own kid', async () => {
    assert.equal((await products(await tokenSignedBy(oldPrivateKey, 'key-2026'))).statusCode, 401);
    assert.equal((await products(await tokenSignedBy(oldPrivateKey, 'key-2024'))).statusCode, 401);
  });
});
