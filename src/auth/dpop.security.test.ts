import assert from 'node:assert/strict';
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { seedUser, type SeededUser } from '../testing/fixtures.js';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { pruneAuthRecords } from './auth-maintenance.js';
import { claimsOf, getProducts, postLogin, postRefresh, refreshTokensOf } from '../testing/auth.js';
import { codeOf, enrolTotp, verifyMfa } from '../testing/mfa.js';
import type { TokenPair } from './token-pair.js';

/** A client's DPoP key, as a client library holds it. */
interface ClientKey {
  alg: string;
  privateKey: CryptoKey;
  jwk: JWK;
  jkt: string;
}

async function clientKey(alg = 'ES256', options: { crv?: string } = {}): Promise<ClientKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true, ...options });
  const jwk = await exportJWK(publicKey);
  return { alg, privateKey, jwk, jkt: await calculateJwkThumbprint(jwk) };
}

// The URL Fastify's inject requests reach (Host: localhost:80).
const BASE = 'http://localhost:80';
const LOGIN = `${BASE}/api/v2/auth/login`;
const REFRESH = `${BASE}/api/v2/auth/refresh`;
const PRODUCTS = `${BASE}/api/v2/products`;
const MFA_VERIFY = `${BASE}/api/v2/auth/mfa/verify`;

interface ProofOptions {
  htm?: string;
  htu?: string;
  /** Seconds from the test clock's now. */
  iatOffset?: number;
  jti?: string;
  accessToken?: string;
  ath?: string;
  typ?: string;
  /** Signs with this key while the header carries `key`'s public key. */
  signer?: CryptoKey;
  jwk?: JWK;
}

describe('DPoP (RFC 9449) under attack', () => {
  let ctx: TestContext;
  let user: SeededUser;
  before(async () => {
    ctx = await createTestApp();
    user = await seedUser(ctx.db);
  });
  after(() => ctx.close());

  const nowSeconds = () => Math.floor(ctx.clock.now().getTime() / 1000);

  function proof(key: ClientKey, options: ProofOptions = {}): Promise<string> {
    const claims: Record<string, unknown> = { htm: options.htm ?? 'POST', htu: options.htu ?? LOGIN, jti: options.jti ?? randomUUID() };
    if (options.ath !== undefined) claims.ath = options.ath;
    else if (options.accessToken !== undefined) claims.ath = createHash('sha256').update(options.accessToken).digest('base64url');
    return new SignJWT(claims)
      .setProtectedHeader({ alg: key.alg, typ: options.typ ?? 'dpop+jwt', jwk: options.jwk ?? key.jwk })
      .setIssuedAt(nowSeconds() + (options.iatOffset ?? 0))
      .sign(options.signer ?? key.privateKey);
  }

  async function boundLogin(key: ClientKey): Promise<TokenPair> {
    const response = await postLogin(ctx, { username: user.username, password: user.password }, { dpop: await proof(key) });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as TokenPair;
  }

  const getWithDpop = (accessToken: string, dpop: string | undefined, url = '/api/v2/products') =>
    ctx.app.inject({ method: 'GET', url, headers: { authorization: `DPoP ${accessToken}`, ...(dpop === undefined ? {} : { dpop }) } });

  const refreshWith = async (key: ClientKey | undefined, refreshToken: string) => postRefresh(ctx, refreshToken, key ? { dpop: await proof(key, { htu: REFRESH }) } : {});

  function assertProofRefused(response: { statusCode: number; headers: Record<string, unknown>; body: string }) {
    assert.equal(response.statusCode, 401, response.body);
    assert.equal(JSON.parse(response.body).code, 'invalid_dpop_proof');
    assert.match(String(response.headers['www-authenticate']), /^DPoP error="invalid_dpop_proof", algs="[^"]*ES256[^"]*"$/);
  }

  const storedProofs = async () => Number((await ctx.db.query<{ n: string }>(`SELECT count(*) AS n FROM dpop_proofs`)).rows[0]!.n);

  test('a login with a proof binds the session: token_type DPoP, cnf.jkt, and the session keeps the thumbprint', async () => {
    const key = await clientKey();
    const pair = await boundLogin(key);
    assert.equal(pair.token_type, 'DPoP');
    assert.deepEqual(claimsOf(pair.token).cnf, { jkt: key.jkt });
    const session = claimsOf(pair.token).sid as string;
    assert.equal((await ctx.db.query<{ dpop_jkt: string }>(`SELECT dpop_jkt FROM sessions WHERE id = $1`, [session])).rows[0]!.dpop_jkt, key.jkt);
  });

  test('a bound token with Authorization: DPoP and a proof works; the query string is not part of htu', async () => {
    const key = await clientKey();
    const pair = await boundLogin(key);
    const response = await getWithDpop(pair.token, await proof(key, { htm: 'GET', htu: PRODUCTS, accessToken: pair.token }));
    assert.equal(response.statusCode, 200, response.body);
    const withQuery = await getWithDpop(pair.token, await proof(key, { htm: 'GET', htu: `${PRODUCTS}?other=1#x`, accessToken: pair.token }), '/api/v2/products?limit=5');
    assert.equal(withQuery.statusCode, 200, withQuery.body);
  });

  test('ES256, EdDSA (Ed25519) and RS256 proofs are accepted', async () => {
    for (const key of [await clientKey('ES256'), await clientKey('EdDSA', { crv: 'Ed25519' }), await clientKey('RS256')]) {
      const pair = await boundLogin(key);
      const response = await getWithDpop(pair.token, await proof(key, { htm: 'GET', htu: PRODUCTS, accessToken: pair.token }));
      assert.equal(response.statusCode, 200, `${key.alg}: ${response.body}`);
    }
  });

  test('an RSA key past 4096 bits, or with another exponent than 65537, is refused before any signature check (a login proof comes before the password)', async () => {
    const key = await clientKey('RS256');
    const oversized = { ...key.jwk, n: `${key.jwk.n}${'A'.repeat(700)}` };
    const odd = { ...key.jwk, e: 'AQAD' };
    for (const jwk of [oversized, odd]) {
      const refused = await postLogin(ctx, { username: user.username, password: user.password }, { dpop: await proof(key, { jwk }) });
      assertProofRefused(refused);
      assert.match(JSON.parse(refused.body).detail, /at most 4096 bits and the exponent 65537/);
    }
  });

  test('a bound access token sent as a Bearer token is 401, with the DPoP challenge', async () => {
    const key = await clientKey();
    const pair = await boundLogin(key);
    const response = await getProducts(ctx, pair.token);
    assert.equal(response.statusCode, 401);
    assert.equal(response.json().code, 'unauthorized');
    assert.match(String(response.headers['www-authenticate']), /^DPoP error="invalid_token"/);
    // With a proof beside it, still not as Bearer.
    const withProof = await ctx.app.inject({
      method: 'GET',
      url: '/api/v2/products',
      headers: { authorization: `Bearer ${pair.token}`, dpop: await proof(key, { htm: 'GET', htu: PRODUCTS, accessToken: pair.token }) },
    });
    assert.equal(withProof.statusCode, 401);
  });

  test('a bound token with the DPoP scheme but no proof is 401', async () => {
    const key = await clientKey();
    const pair = await boundLogin(key);
    assertProofRefused(await getWithDpop(pair.token, undefined));
  });

  test('a bad token with the DPoP scheme is 401 with the DPoP challenge (RFC 9449 §7.1), not the Bearer one', async () => {
    const key = await clientKey();
    const pair = await boundLogin(key);
    const [header, payload, signature] = pair.token.split('.') as [string, string, string];
    const tampered = `${header}.${payload}.${signature.slice(0, -4)}${signature.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    const response = await getWithDpop(tampered, await proof(key, { htm: 'GET', htu: PRODUCTS, accessToken: tampered }));
    assert.equal(response.statusCode, 401, response.body);
    assert.equal(response.json().code, 'unauthorized');
    assert.match(String(response.headers['www-authenticate']), /^DPoP error="invalid_token", algs="[^"]*ES256[^"]*"$/);
  });

  test('a replayed proof (same jti) is refused, on a resource and on a login', async () => {
    const key = await clientKey();
    const pair = await boundLogin(key);
    const once = await proof(key, { htm: 'GET', htu: PRODUCTS, accessToken: pair.token });
    assert.equal((await getWithDpop(pair.token, once)).statusCode, 200);
    assertProofRefused(await getWithDpop(pair.token, once));
    // The same jti in a freshly signed proof is the same proof.
    const jti = randomUUID();
    assert.equal((await getWithDpop(pair.token, await proof(key, { htm: 'GET', htu: PRODUCTS, accessToken: pair.token, jti }))).statusCode, 200);
    assertProofRefused(await getWithDpop(pair.token, await proof(key, { htm: 'GET', htu: PRODUCTS, accessToken: pair.token, jti })));

    const loginProof = await proof(key);
    assert.equal((await postLogin(ctx, { username: user.username, password: user.password }, { dpop: loginProof })).statusCode, 200);
    assertProofRefused(await postLogin(ctx, { username: user.username, password: user.password }, { dpop: loginProof }));
  });

  test('a proof for another URL (host, scheme or path) or another method is refused', async () => {
    const key = await clientKey();
    const pair = await boundLogin(key);
    for (const htu of ['http://evil.example/api/v2/products', 'https://localhost/api/v2/products', `${BASE}/api/v2/auth/sessions`, `${BASE}/api/v2/products/`, 'not a url']) {
      assertProofRefused(await getWithDpop(pair.token, await proof(key, { htm: 'GET', htu, accessToken: pair.token })));
    }
    for (const htm of ['POST', 'get', 'HEAD']) {
      assertProofRefused(await getWithDpop(pair.token, await proof(key, { htm, htu: PRODUCTS, accessToken: pair.token })));
    }
    // A login proof made for the refresh URL, and the other way round.
    assertProofRefused(await postLogin(ctx, { username: user.username, password: user.password }, { dpop: await proof(key, { htu: REFRESH }) }));
    assertProofRefused(await postRefresh(ctx, pair.refresh_token, { dpop: await proof(key, { htu: LOGIN }) }));
  });

  test('a stale or future iat (beyond DPOP_PROOF_WINDOW_SECONDS, 60) is refused; within it, accepted', async () => {
    const key = await clientKey();
    const pair = await boundLogin(key);
    for (const iatOffset of [-61, 61, -3600]) {
      assertProofRefused(await getWithDpop(pair.token, await proof(key, { htm: 'GET', htu: PRODUCTS, accessToken: pair.token, iatOffset })));
    }
    for (const iatOffset of [-60, 60]) {
      assert.equal((await getWithDpop(pair.token, await proof(key, { htm: 'GET', htu: PRODUCTS, accessToken: pair.token, iatOffset }))).statusCode, 200);
    }
    // A proof made now and kept: once its window passed it is refused, so forgetting its jti is safe.
    const kept = await proof(key, { htm: 'GET', htu: PRODUCTS, accessToken: pair.token });
    ctx.clock.advanceSeconds(61);
    const fresh = await ctx.app.inject({ method: 'POST', url: '/api/v2/auth/refresh', payload: { refresh_token: pair.refresh_token }, headers: { dpop: await proof(key, { htu: REFRESH }) } });
    assert.equal(fresh.statusCode, 200, fresh.body);
    const next = fresh.json() as TokenPair;
    assertProofRefused(await getWithDpop(next.token, kept));
  });

  test('a missing or wrong ath (the hash of another token) is refused', async () => {
    const key = await clientKey();
    const pair = await boundLogin(key);
    const other = await boundLogin(key);
    assertProofRefused(await getWithDpop(pair.token, await proof(key, { htm: 'GET', htu: PRODUCTS })));
    assertProofRefused(await getWithDpop(pair.token, await proof(key, { htm: 'GET', htu: PRODUCTS, accessToken: other.token })));
    assertProofRefused(await getWithDpop(pair.token, await proof(key, { htm: 'GET', htu: PRODUCTS, ath: 'x' })));
  });

  test('a proof of another key than the token is bound to is refused', async () => {
    const key = await clientKey();
    const thief = await clientKey();
    const pair = await boundLogin(key);
    assertProofRefused(await getWithDpop(pair.token, await proof(thief, { htm: 'GET', htu: PRODUCTS, accessToken: pair.token })));
  });

  test('a proof signed by another private key than the embedded jwk, alg none, HMAC, a private jwk or another typ is refused', async () => {
    const key = await clientKey();
    const thief = await clientKey();
    const pair = await boundLogin(key);
    const at = { htm: 'GET', htu: PRODUCTS, accessToken: pair.token };
    // The victim's public key in the header, the thief's signature.
    assertProofRefused(await getWithDpop(pair.token, await proof(key, { ...at, signer: thief.privateKey })));
    assertProofRefused(await getWithDpop(pair.token, await proof(key, { ...at, typ: 'JWT' })));
    const privateJwk = await exportJWK(key.privateKey);
    assertProofRefused(await getWithDpop(pair.token, await proof(key, { ...at, jwk: privateJwk })));

    const claims = { htm: 'GET', htu: PRODUCTS, jti: randomUUID(), iat: nowSeconds(), ath: createHash('sha256').update(pair.token).digest('base64url') };
    const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const none = `${b64({ alg: 'none', typ: 'dpop+jwt', jwk: key.jwk })}.${b64(claims)}.`;
    assertProofRefused(await getWithDpop(pair.token, none));
    // HS256 keyed with the public key's bytes (the algorithm-confusion attack).
    const signingInput = `${b64({ alg: 'HS256', typ: 'dpop+jwt', jwk: key.jwk })}.${b64(claims)}`;
    const hs = `${signingInput}.${createHmac('sha256', JSON.stringify(key.jwk)).update(signingInput).digest('base64url')}`;
    assertProofRefused(await getWithDpop(pair.token, hs));
    // An asymmetric algorithm outside the offered list (ES512) is refused as well.
    assertProofRefused(await postLogin(ctx, { username: user.username, password: user.password }, { dpop: await proof(await clientKey('ES512')) }));
    // Two proofs (two DPoP headers): RFC 9449 allows one.
    const two = await ctx.app.inject({ method: 'GET', url: '/api/v2/products', headers: { authorization: `DPoP ${pair.token}`, dpop: [await proof(key, at), await proof(key, at)] } });
    assertProofRefused(two);
  });

  test('an unbound token is not accepted with the DPoP scheme', async () => {
    const response = await postLogin(ctx, { username: user.username, password: user.password });
    const pair = response.json() as TokenPair;
    const key = await clientKey();
    const result = await getWithDpop(pair.token, await proof(key, { htm: 'GET', htu: PRODUCTS, accessToken: pair.token }));
    assert.equal(result.statusCode, 401);
  });

  test('a bound refresh token without a proof, or with another key, is 401 and not consumed: the right key still refreshes it', async () => {
    const key = await clientKey();
    const thief = await clientKey();
    const pair = await boundLogin(key);
    const before = await refreshTokensOf(ctx, user.id);
    assertProofRefused(await refreshWith(undefined, pair.refresh_token));
    assertProofRefused(await refreshWith(thief, pair.refresh_token));
    assert.deepEqual(await refreshTokensOf(ctx, user.id), before);
    const ok = await refreshWith(key, pair.refresh_token);
    assert.equal(ok.statusCode, 200, ok.body);
  });

  test('a rotated bound refresh token presented without the key is refused without the reuse sweep', async () => {
    const victim = await seedUser(ctx.db);
    const key = await clientKey();
    const login = await postLogin(ctx, { username: victim.username, password: victim.password }, { dpop: await proof(key) });
    const pair = login.json() as TokenPair;
    const next = (await refreshWith(key, pair.refresh_token)).json() as TokenPair;
    // A thief with the old token and no key cannot end the victim's sessions.
    assertProofRefused(await refreshWith(undefined, pair.refresh_token));
    const tokens = await refreshTokensOf(ctx, victim.id);
    assert.equal(tokens.length, 2, 'the login and its successor');
    assert.ok(tokens.every((row) => row.revoked_reason !== 'security_breach_token_reuse'));
    assert.equal((await refreshWith(key, next.refresh_token)).statusCode, 200);
  });

  test('a refresh keeps the binding: DPoP again, the same cnf.jkt, and the next refresh still needs the key', async () => {
    const key = await clientKey();
    const pair = await boundLogin(key);
    const second = (await refreshWith(key, pair.refresh_token)).json() as TokenPair;
    assert.equal(second.token_type, 'DPoP');
    assert.deepEqual(claimsOf(second.token).cnf, { jkt: key.jkt });
    assertProofRefused(await refreshWith(undefined, second.refresh_token));
    const third = await refreshWith(key, second.refresh_token);
    assert.equal(third.statusCode, 200);
    assert.equal(third.json().token_type, 'DPoP');
  });

  test('a replayed refresh proof is refused and does not consume the token', async () => {
    const key = await clientKey();
    const first = await boundLogin(key);
    const second = await boundLogin(key);
    const dpop = await proof(key, { htu: REFRESH });
    assert.equal((await postRefresh(ctx, first.refresh_token, { dpop })).statusCode, 200);
    assertProofRefused(await postRefresh(ctx, second.refresh_token, { dpop }));
    assert.equal((await refreshWith(key, second.refresh_token)).statusCode, 200);
  });

  test('a Bearer session refreshed with a proof becomes bound to that key', async () => {
    const plain = (await postLogin(ctx, { username: user.username, password: user.password })).json() as TokenPair;
    const key = await clientKey();
    const bound = await refreshWith(key, plain.refresh_token);
    assert.equal(bound.json().token_type, 'DPoP');
    assertProofRefused(await refreshWith(undefined, bound.json().refresh_token));
  });

  test('a stolen Bearer refresh token that the thief binds to its own key is still caught: the owner\'s rotated token is reuse and ends the thief\'s session', async () => {
    const victim = await seedUser(ctx.db);
    const plain = (await postLogin(ctx, { username: victim.username, password: victim.password })).json() as TokenPair;
    const thief = await clientKey();
    const stolen = await refreshWith(thief, plain.refresh_token);
    assert.equal(stolen.json().token_type, 'DPoP');
    // The owner's client (no DPoP) presents the token it holds, rotated by the thief: the spec's breach.
    const replay = await refreshWith(undefined, plain.refresh_token);
    assert.equal(replay.statusCode, 401, replay.body);
    assert.equal(replay.json().code, 'invalid_refresh_token');
    assert.ok((await refreshTokensOf(ctx, victim.id)).some((row) => row.revoked_reason === 'security_breach_token_reuse'));
    const thiefNext = await refreshWith(thief, stolen.json().refresh_token);
    assert.equal(thiefNext.statusCode, 401, thiefNext.body);
    assert.equal(thiefNext.json().code, 'invalid_refresh_token');
  });

  test('clients that send no proof are unchanged: token_type Bearer, no cnf, Bearer requests and refreshes work', async () => {
    const pair = (await postLogin(ctx, { username: user.username, password: user.password })).json() as TokenPair;
    assert.equal(pair.token_type, 'Bearer');
    assert.equal(claimsOf(pair.token).cnf, undefined);
    assert.equal((await getProducts(ctx, pair.token)).statusCode, 200);
    const next = await refreshWith(undefined, pair.refresh_token);
    assert.equal(next.statusCode, 200);
    assert.equal(next.json().token_type, 'Bearer');
  });

  test('nothing is stored for a proof without a good credential: a wrong password, an invalid refresh or access token', async () => {
    const key = await clientKey();
    const pair = await boundLogin(key);
    const stored = await storedProofs();
    assert.equal((await postLogin(ctx, { username: user.username, password: 'wrong password!' }, { dpop: await proof(key) })).statusCode, 401);
    assert.equal((await postLogin(ctx, { username: 'nobody-at-all', password: 'wrong password!' }, { dpop: await proof(key) })).statusCode, 401);
    assert.equal((await refreshWith(key, 'A'.repeat(43))).statusCode, 401);
    const forged = `${pair.token.slice(0, -4)}AAAA`;
    assert.equal((await getWithDpop(forged, await proof(key, { htm: 'GET', htu: PRODUCTS, accessToken: forged }))).statusCode, 401);
    assert.equal(await storedProofs(), stored);
  });

  test('proofs past their window are pruned', async () => {
    const key = await clientKey();
    const pair = await boundLogin(key);
    assert.equal((await getWithDpop(pair.token, await proof(key, { htm: 'GET', htu: PRODUCTS, accessToken: pair.token }))).statusCode, 200);
    assert.ok((await storedProofs()) > 0);
    const later = new Date(ctx.clock.now().getTime() + 121_000);
    const pruned = await pruneAuthRecords(ctx.db, later, { refreshTokenTtlSeconds: ctx.config.REFRESH_TOKEN_TTL_SECONDS, auditRetentionDays: ctx.config.AUTH_AUDIT_RETENTION_DAYS });
    assert.ok(pruned.dpopProofs > 0);
    assert.equal(await storedProofs(), 0);
  });

  test('a login finished with a second factor is bound by the proof sent with mfa/verify, as a one-step login is by the login\'s', async () => {
    const mfaUser = await seedUser(ctx.db, { username: 'dpop-mfa' });
    const secret = await enrolTotp(ctx, mfaUser);
    const key = await clientKey();
    const challenge = await postLogin(ctx, { username: mfaUser.username, password: mfaUser.password }, { dpop: await proof(key) });
    assert.equal(challenge.statusCode, 401, challenge.body);
    assert.equal(challenge.json().code, 'mfa_required');
    const verified = await verifyMfa(ctx, { mfa_token: challenge.json().mfa_token, code: codeOf(ctx, secret) }, { dpop: await proof(key, { htu: MFA_VERIFY }) });
    assert.equal(verified.statusCode, 200, verified.body);
    const pair = verified.json() as TokenPair;
    assert.equal(pair.token_type, 'DPoP');
    assert.deepEqual(claimsOf(pair.token).cnf, { jkt: key.jkt });
    // Bound like any other DPoP session: as a Bearer token it is refused, with a proof it works.
    assert.equal((await getProducts(ctx, pair.token)).statusCode, 401);
    assert.equal((await getWithDpop(pair.token, await proof(key, { htm: 'GET', htu: PRODUCTS, accessToken: pair.token }))).statusCode, 200);
    // And its refresh needs that key.
    assert.equal((await refreshWith(undefined, pair.refresh_token)).statusCode, 401);
    assert.equal((await refreshWith(key, pair.refresh_token)).statusCode, 200);
  });
});

describe('DPoP htu behind a reverse proxy', () => {
  const publicUrl = 'https://api.example.com/api/v2/auth/login';
  const forwarded = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'api.example.com' };

  async function loginThroughProxy(env: Record<string, string>, htu: string) {
    const ctx = await createTestApp(env);
    try {
      const user = await seedUser(ctx.db);
      const key = await clientKey();
      const dpop = await new SignJWT({ htm: 'POST', htu, jti: randomUUID() })
        .setProtectedHeader({ alg: key.alg, typ: 'dpop+jwt', jwk: key.jwk })
        .setIssuedAt(Math.floor(ctx.clock.now().getTime() / 1000))
        .sign(key.privateKey);
      // Fastify's inject comes from 127.0.0.1.
      return await postLogin(ctx, { username: user.username, password: user.password }, { ...forwarded, dpop });
    } finally {
      await ctx.close();
    }
  }

  test('the scheme and host of X-Forwarded-Proto/-Host count when the proxy is trusted (TRUST_PROXY)', async () => {
    const response = await loginThroughProxy({ TRUST_PROXY: '127.0.0.1' }, publicUrl);
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.json().token_type, 'DPoP');
  });

  test('from a peer that is not trusted they are ignored: a proof for the forwarded URL is refused, one for the URL reached is accepted', async () => {
    const spoofed = await loginThroughProxy({}, publicUrl);
    assert.equal(spoofed.statusCode, 401);
    assert.equal(spoofed.json().code, 'invalid_dpop_proof');
    assert.equal((await loginThroughProxy({}, LOGIN)).statusCode, 200);
  });
});
