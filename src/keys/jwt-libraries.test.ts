import assert from 'node:assert/strict';
import { createPublicKey, generateKeyPairSync, randomBytes, type JsonWebKey } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { createVerifier } from 'fast-jwt';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import jsonwebtoken from 'jsonwebtoken';
import jwksRsa from 'jwks-rsa';
import { buildApp } from '../app.js';
import { getProducts, loginOk } from '../testing/auth.js';
import { ManualClock } from '../clock.js';
import { loadConfig } from '../config.js';
import { loadKeys, reloadKeys } from '../keys.js';
import { seedUser } from '../testing/fixtures.js';
import type { TestContext } from '../testing/test-app.js';
import { createTestDatabase } from '../testing/test-database.js';
import { JWT_ALGORITHMS, type JwtAlgorithm } from './jwt-algorithms.js';
import { rotateJwtKey } from './jwt-key-ring.js';
import { publishedAfterRetirementMs } from './jwt-key-timeline.js';

/**
 * Plaza's access tokens as other services verify them (issue 32, item 1): through the JWKS served
 * over HTTP, with the three JWT libraries Node services use: jose (createRemoteJWKSet),
 * jsonwebtoken with jwks-rsa (what express-jwt and passport-jwt are built on), and fast-jwt with
 * keys built from the JWKS. Each verifier is told the one algorithm it expects, as their docs ask.
 */

interface Installation extends TestContext {
  jwksUrl: string;
}

const open: Installation[] = [];
after(async () => {
  for (const installation of open) await installation.close();
});

/** A new installation (its first start creates its first key) on its own database, listening on an ephemeral port. */
async function install(env: Record<string, string>, clock = new ManualClock(new Date())): Promise<Installation> {
  const db = await createTestDatabase();
  const config = loadConfig({ LOG_LEVEL: 'silent', SECRETS_KEY: randomBytes(32).toString('base64'), ...env });
  const keys = await loadKeys(config, db, clock);
  const app = await buildApp({ config, db, keys, clock, logger: false });
  const jwksUrl = `${await app.listen({ host: '127.0.0.1', port: 0 })}/.well-known/jwks.json`;
  const installation: Installation = {
    app,
    db,
    config,
    keys,
    clock,
    jwksUrl,
    async close() {
      await app.close();
      await db.close();
    },
  };
  open.push(installation);
  return installation;
}

/** jose: createRemoteJWKSet on the JWKS's address, the verification its README shows. */
async function verifyWithJose(token: string, { jwksUrl, config, clock }: Installation, alg: JwtAlgorithm) {
  const { payload } = await jwtVerify(token, createRemoteJWKSet(new URL(jwksUrl)), { issuer: config.JWT_ISSUER, audience: config.JWT_AUDIENCE, algorithms: [alg], typ: 'at+jwt', currentDate: clock.now() });
  return payload;
}

/** jsonwebtoken, its key from jwks-rsa's getSigningKey by the token's kid (express-jwt's and passport-jwt's setup). */
async function verifyWithJsonwebtoken(token: string, { jwksUrl, config, clock }: Installation, alg: JwtAlgorithm) {
  const client = jwksRsa({ jwksUri: jwksUrl, cache: false });
  const getKey: jsonwebtoken.GetPublicKeyOrSecret = (header, callback) => {
    client.getSigningKey(header.kid).then((key) => callback(null, key.getPublicKey()), (error: Error) => callback(error));
  };
  return new Promise<jsonwebtoken.JwtPayload>((resolve, reject) => {
    jsonwebtoken.verify(token, getKey, { algorithms: [alg as jsonwebtoken.Algorithm], issuer: config.JWT_ISSUER, audience: config.JWT_AUDIENCE, clockTimestamp: Math.floor(clock.now().getTime() / 1000) }, (error, payload) =>
      error ? reject(error) : resolve(payload as jsonwebtoken.JwtPayload),
    );
  });
}

/** fast-jwt, its key the JWKS entry of the token's kid (fetched over HTTP) as a PEM. */
async function verifyWithFastJwt(token: string, { jwksUrl, config, clock }: Installation, alg: JwtAlgorithm) {
  const verify = createVerifier({
    algorithms: [alg],
    allowedIss: config.JWT_ISSUER,
    allowedAud: config.JWT_AUDIENCE,
    clockTimestamp: clock.now().getTime(),
    key: async ({ header }: { header: { kid?: string } }) => {
      const { keys } = (await (await fetch(jwksUrl)).json()) as { keys: (JsonWebKey & { kid: string })[] };
      const jwk = keys.find((key) => key.kid === header.kid);
      if (!jwk) throw new Error(`no key ${header.kid} in the JWKS`);
      return createPublicKey({ key: jwk, format: 'jwk' }).export({ format: 'pem', type: 'spki' }).toString();
    },
  });
  return (await verify(token)) as Record<string, unknown>;
}

async function jwksOf(installation: Installation) {
  const response = await fetch(installation.jwksUrl);
  assert.equal(response.status, 200);
  return ((await response.json()) as { keys: Record<string, string>[] }).keys;
}

describe('Plaza\'s access tokens verify with jose, jsonwebtoken + jwks-rsa and fast-jwt through the served JWKS', () => {
  test('a new installation signs with ES256 by default', async () => {
    const installation = await install({});
    assert.equal(installation.config.JWT_ALGORITHM, 'ES256');
    const user = await seedUser(installation.db);
    const { token } = await loginOk(installation, user);
    assert.equal(decodeProtectedHeader(token).alg, 'ES256');
    const [published] = await jwksOf(installation);
    assert.deepEqual({ kty: published!.kty, crv: published!.crv, alg: published!.alg, use: published!.use }, { kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    assert.equal((await verifyWithJsonwebtoken(token, installation, 'ES256')).sub, String(user.id));
  });

  for (const alg of JWT_ALGORITHMS) {
    test(`JWT_ALGORITHM=${alg}: the first key is for ${alg}, published with its alg; every library verifies its tokens (jsonwebtoken not EdDSA's: documented)`, async () => {
      const installation = await install({ JWT_ALGORITHM: alg });
      const user = await seedUser(installation.db);
      const { token } = await loginOk(installation, user);
      const header = decodeProtectedHeader(token);
      assert.equal(header.alg, alg);
      assert.equal(header.typ, 'at+jwt');

      const published = await jwksOf(installation);
      assert.equal(published.length, 1);
      const jwk = published[0]!;
      assert.equal(jwk.kid, header.kid);
      assert.equal(jwk.alg, alg);
      assert.equal(jwk.use, 'sig');
      const expected = { ES256: ['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y'], EdDSA: ['alg', 'crv', 'kid', 'kty', 'use', 'x'], RS256: ['alg', 'e', 'kid', 'kty', 'n', 'use'] }[alg];
      assert.deepEqual(Object.keys(jwk).sort(), expected, 'the public members of its type, nothing private');
      if (alg === 'ES256') assert.deepEqual([jwk.kty, jwk.crv], ['EC', 'P-256']);
      if (alg === 'EdDSA') assert.deepEqual([jwk.kty, jwk.crv], ['OKP', 'Ed25519']);
      if (alg === 'RS256') {
        assert.equal(jwk.kty, 'RSA');
        assert.ok(Buffer.from(jwk.n!, 'base64url').length * 8 >= 2048, 'an RSA modulus of at least 2048 bits');
      }
      const { rows } = await installation.db.query<{ alg: string }>(`SELECT public_jwk->>'alg' AS alg FROM jwt_signing_keys`);
      assert.deepEqual(rows, [{ alg }], 'the stored key records its algorithm');

      const sub = String(user.id);
      assert.equal((await verifyWithJose(token, installation, alg)).sub, sub);
      assert.equal((await verifyWithFastJwt(token, installation, alg)).sub, sub);
      if (alg === 'EdDSA') {
        // The reason ES256 is the default: jsonwebtoken (9) knows no Ed25519 key.
        await assert.rejects(verifyWithJsonwebtoken(token, installation, alg), /Unknown key type "ed25519"/);
      } else {
        assert.equal((await verifyWithJsonwebtoken(token, installation, alg)).sub, sub);
      }
      // And Plaza itself.
      assert.equal((await getProducts(installation, token)).statusCode, 200);
    });
  }

  test('an installation that signs with EdDSA keeps its key under the new default; a rotation to ES256 keeps its tokens verifying until they expire', async () => {
    const clock = new ManualClock(new Date());
    // The existing installation: its first key made by a release that signed with EdDSA only.
    const secretsKey = randomBytes(32).toString('base64');
    const db = await createTestDatabase();
    await loadKeys(loadConfig({ LOG_LEVEL: 'silent', SECRETS_KEY: secretsKey, JWT_ALGORITHM: 'EdDSA' }), db, clock);
    // The new release on the default settings.
    const config = loadConfig({ LOG_LEVEL: 'silent', SECRETS_KEY: secretsKey });
    assert.equal(config.JWT_ALGORITHM, 'ES256');
    const keys = await loadKeys(config, db, clock);
    const app = await buildApp({ config, db, keys, clock, logger: false });
    const jwksUrl = `${await app.listen({ host: '127.0.0.1', port: 0 })}/.well-known/jwks.json`;
    const close = async () => {
      await app.close();
      await db.close();
    };
    const installation: Installation = { app, db, config, keys, clock, jwksUrl, close };
    open.push(installation);

    const user = await seedUser(installation.db);
    const old = (await loginOk(installation, user)).token;
    assert.equal(decodeProtectedHeader(old).alg, 'EdDSA', 'an existing key keeps signing with its algorithm');

    const rotated = await rotateJwtKey(installation.db, keys.secrets.key, config, clock);
    assert.equal(rotated.alg, 'ES256', 'a rotation makes a key for JWT_ALGORITHM');
    clock.advance(rotated.signsFrom.getTime() - clock.now().getTime());
    await reloadKeys(keys);
    const fresh = (await loginOk(installation, user)).token;
    assert.deepEqual([decodeProtectedHeader(fresh).alg, decodeProtectedHeader(fresh).kid], ['ES256', rotated.kid]);
    assert.deepEqual((await jwksOf(installation)).map((jwk) => jwk.alg).sort(), ['ES256', 'EdDSA'], 'both keys published, each with its alg');

    // The retired key's token still verifies, in Plaza and in other services, until it expires.
    for (const [token, alg] of [[old, 'EdDSA'], [fresh, 'ES256']] as const) {
      assert.equal((await getProducts(installation, token)).statusCode, 200, alg);
      assert.equal((await verifyWithJose(token, installation, alg)).sub, String(user.id), alg);
      assert.equal((await verifyWithFastJwt(token, installation, alg)).sub, String(user.id), alg);
    }
    assert.equal((await verifyWithJsonwebtoken(fresh, installation, 'ES256')).sub, String(user.id));
    // A verifier that accepts both during the change (jose) verifies each with its key's algorithm.
    for (const token of [old, fresh]) await jwtVerify(token, createRemoteJWKSet(new URL(installation.jwksUrl)), { algorithms: ['EdDSA', 'ES256'], currentDate: clock.now() });

    // When the last EdDSA tokens have expired, the old key leaves the JWKS.
    clock.advance(publishedAfterRetirementMs(config));
    await reloadKeys(keys);
    assert.deepEqual((await jwksOf(installation)).map((jwk) => jwk.alg), ['ES256']);
    assert.equal((await getProducts(installation, old)).statusCode, 401);
  });

  test('the Ed25519 key an earlier version kept in DATA_DIR/keys.json is imported as it is, and keeps signing with EdDSA', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'plaza-legacy-key-'));
    try {
      const legacyPem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
      writeFileSync(join(dataDir, 'keys.json'), JSON.stringify({ secretsKey: randomBytes(32).toString('base64'), jwtPrivateKeyPem: legacyPem }), { mode: 0o600 });
      const db = await createTestDatabase();
      try {
        const keys = await loadKeys(loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dataDir }), db);
        assert.equal(keys.signing.alg, 'EdDSA');
        assert.deepEqual(keys.jwks.map((jwk) => [jwk.kty, jwk.crv, jwk.x, jwk.alg]), [['OKP', 'Ed25519', createPublicKey(legacyPem).export({ format: 'jwk' }).x, 'EdDSA']]);
      } finally {
        await db.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
