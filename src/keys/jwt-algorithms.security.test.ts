import assert from 'node:assert/strict';
import { createHmac, createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, randomUUID, type KeyObject } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { SignJWT, type JWTPayload } from 'jose';
import { buildApp } from '../app.js';
import { getProducts } from '../testing/auth.js';
import { ManualClock } from '../clock.js';
import { ConfigError, loadConfig } from '../config.js';
import { loadKeys, type Keys } from '../keys.js';
import { seedUser, type SeededUser } from '../testing/fixtures.js';
import type { TestContext } from '../testing/test-app.js';
import { createTestDatabase } from '../testing/test-database.js';
import { decryptSecret } from './secret-box.js';
import { JWT_ALGORITHMS, type JwtAlgorithm } from './jwt-algorithms.js';
import { jwtKeyEncryptionKey, rotateJwtKey } from './jwt-key-ring.js';

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/**
 * Keys of three algorithms verify tokens at once (an EdDSA installation rotated to RS256, then to
 * ES256): each key verifies only tokens of its own algorithm. An attacker who changes a token's
 * alg, signs with a key's own private key under another algorithm, uses the public key as an HMAC
 * secret, or names another key's kid gets 401.
 */
describe('JWT algorithms: each key verifies with its own algorithm only (no algorithm confusion)', () => {
  let ctx: TestContext;
  let user: SeededUser;
  const ring: { kid: string; alg: JwtAlgorithm; privateKey: KeyObject; publicKey: KeyObject }[] = [];

  before(async () => {
    const clock = new ManualClock(new Date());
    const db = await createTestDatabase();
    const config = loadConfig({ LOG_LEVEL: 'silent', SECRETS_KEY: randomBytes(32).toString('base64'), JWT_ALGORITHM: 'EdDSA' });
    const keys = await loadKeys(config, db, clock);
    await rotateJwtKey(db, keys.secrets.key, config, clock, 'RS256');
    await rotateJwtKey(db, keys.secrets.key, config, clock, 'ES256');
    await keys.ring!.reload();
    const app = await buildApp({ config, db, keys, clock, logger: false });
    ctx = {
      app,
      db,
      config,
      keys,
      clock,
      async close() {
        await app.close();
        await db.close();
      },
    };
    const { rows } = await db.query<{ kid: string; alg: JwtAlgorithm; private_key_encrypted: string }>(`SELECT kid, public_jwk->>'alg' AS alg, private_key_encrypted FROM jwt_signing_keys ORDER BY activates_at`);
    for (const row of rows) {
      const privateKey = createPrivateKey(decryptSecret(jwtKeyEncryptionKey(keys.secrets.key), row.private_key_encrypted));
      ring.push({ kid: row.kid, alg: row.alg, privateKey, publicKey: createPublicKey(privateKey) });
    }
    assert.deepEqual(ring.map((key) => key.alg), ['EdDSA', 'RS256', 'ES256']);
    assert.deepEqual([...keys.verification.keys()].sort(), ring.map((key) => key.kid).sort(), 'all three verify tokens now');
    user = await seedUser(db);
  });
  after(() => ctx.close());

  const claims = (): JWTPayload => {
    const now = Math.floor(ctx.clock.now().getTime() / 1000);
    return { iss: ctx.config.JWT_ISSUER, aud: ctx.config.JWT_AUDIENCE, sub: String(user.id), sid: randomUUID(), seller_id: user.sellerId, role: 'seller', iat: now, exp: now + 900, jti: randomUUID() };
  };
  const sign = (key: KeyObject, alg: string, kid: string) => new SignJWT(claims()).setProtectedHeader({ alg, typ: 'at+jwt', kid }).sign(key);
  const hmac = (alg: string, kid: string, secret: string | Buffer) => {
    const signingInput = `${b64({ alg, typ: 'at+jwt', kid })}.${b64(claims())}`;
    return `${signingInput}.${createHmac(`sha${alg.slice(2)}`, secret).update(signingInput).digest('base64url')}`;
  };
  const status = async (token: string) => (await getProducts(ctx, token)).statusCode;

  test('the control: a token of each key, signed with its own algorithm, is accepted', async () => {
    for (const key of ring) assert.equal(await status(await sign(key.privateKey, key.alg, key.kid)), 200, key.alg);
  });

  test('a token whose header alg was changed (the signature kept) is refused, for every key and every other algorithm', async () => {
    for (const key of ring) {
      const [, payload, signature] = (await sign(key.privateKey, key.alg, key.kid)).split('.') as [string, string, string];
      for (const alg of [...JWT_ALGORITHMS, 'PS256', 'RS512', 'ES384', 'Ed25519', 'HS256', 'none'].filter((alg) => alg !== key.alg)) {
        assert.equal(await status(`${b64({ alg, typ: 'at+jwt', kid: key.kid })}.${payload}.${signature}`), 401, `${key.alg} key's token relabelled ${alg}`);
      }
    }
  });

  test('a key\'s own private key signing under another algorithm than the key\'s is refused', async () => {
    const rsa = ring.find((key) => key.alg === 'RS256')!;
    const ed = ring.find((key) => key.alg === 'EdDSA')!;
    // Signatures the attacker's copy of a private key could make; none is the key's algorithm.
    for (const alg of ['PS256', 'RS384', 'RS512', 'PS512']) assert.equal(await status(await sign(rsa.privateKey, alg, rsa.kid)), 401, `RSA key under ${alg}`);
    assert.equal(await status(await sign(ed.privateKey, 'Ed25519', ed.kid)), 401, 'Ed25519 key under the fully-specified alg Ed25519');
  });

  test('HS256/384/512 keyed with the public key (PEM, JWK, raw bytes) is refused for every key', async () => {
    for (const key of ring) {
      const jwk = key.publicKey.export({ format: 'jwk' });
      const secrets = [key.publicKey.export({ format: 'pem', type: 'spki' }).toString(), JSON.stringify(jwk), JSON.stringify({ ...jwk, kid: key.kid, alg: key.alg, use: 'sig' }), Buffer.from((jwk.x ?? jwk.n)!, 'base64url')];
      for (const secret of secrets) {
        for (const alg of ['HS256', 'HS384', 'HS512']) assert.equal(await status(hmac(alg, key.kid, secret)), 401, `${alg} with the ${key.alg} key's public key`);
      }
    }
  });

  test('a key\'s token under another key\'s kid is refused, whichever the algorithms', async () => {
    for (const signer of ring) {
      for (const named of ring.filter((key) => key !== signer)) {
        assert.equal(await status(await sign(signer.privateKey, signer.alg, named.kid)), 401, `${signer.alg} key signing as ${named.alg} key`);
      }
    }
  });
});

describe('JWT keys from the environment: the algorithm is the key type\'s, and a key is never declared for another', () => {
  const pem = (key: KeyObject) => key.export({ format: 'pem', type: 'pkcs8' }).toString();
  const load = (env: Record<string, string>): Promise<Keys> => loadKeys(loadConfig({ LOG_LEVEL: 'silent', SECRETS_KEY: randomBytes(32).toString('base64'), ...env }));

  test('JWT_PRIVATE_KEY signs with its type\'s algorithm, whatever JWT_ALGORITHM says', async () => {
    const cases = [
      [generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey, 'ES256'],
      [generateKeyPairSync('ed25519').privateKey, 'EdDSA'],
      [generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey, 'RS256'],
    ] as const;
    for (const [key, alg] of cases) {
      const keys = await load({ JWT_PRIVATE_KEY: pem(key), JWT_ALGORITHM: alg === 'ES256' ? 'RS256' : 'ES256' });
      assert.equal(keys.signing.alg, alg);
      assert.equal(keys.verification.get(keys.signing.kid)!.alg, alg);
      assert.equal(keys.jwks[0]!.alg, alg);
    }
  });

  test('keys that cannot sign access tokens are refused at start, naming the setting', async () => {
    for (const [what, key] of [
      ['RSA 1024', generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey],
      ['EC P-384', generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey],
      ['RSA-PSS', generateKeyPairSync('rsa-pss', { modulusLength: 2048 }).privateKey],
      ['X25519', generateKeyPairSync('x25519').privateKey],
    ] as const) {
      await assert.rejects(load({ JWT_PRIVATE_KEY: pem(key) }), (error: Error) => error instanceof ConfigError && /Cannot import JWT_PRIVATE_KEY/.test(error.message), what);
    }
  });

  test('JWT_VERIFICATION_KEYS: each verifies with its type\'s algorithm; one whose alg names another is refused', async () => {
    const signer = pem(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey);
    const ed = createPublicKey(generateKeyPairSync('ed25519').privateKey).export({ format: 'jwk' });
    const rsa = createPublicKey(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey).export({ format: 'jwk' });
    const keys = await load({ JWT_PRIVATE_KEY: signer, JWT_VERIFICATION_KEYS: JSON.stringify([{ ...ed, kid: 'old-ed' }, { ...rsa, kid: 'old-rsa', alg: 'RS256' }]) });
    assert.equal(keys.verification.get('old-ed')!.alg, 'EdDSA');
    assert.equal(keys.verification.get('old-rsa')!.alg, 'RS256');
    for (const [jwk, alg] of [[ed, 'ES256'], [ed, 'HS256'], [rsa, 'PS256'], [rsa, 'ES256']] as const) {
      await assert.rejects(load({ JWT_PRIVATE_KEY: signer, JWT_VERIFICATION_KEYS: JSON.stringify([{ ...jwk, kid: 'k', alg }]) }), (error: Error) => error instanceof ConfigError && /Cannot import JWT_VERIFICATION_KEYS/.test(error.message), `${String(jwk.kty)} as ${alg}`);
    }
  });
});
