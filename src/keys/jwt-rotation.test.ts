import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { after, before, describe, mock, test } from 'node:test';
import { createLocalJWKSet, createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { buildApp, type App } from '../app.js';
import { issueAccessToken } from '../auth/access-tokens.js';
import { ManualClock } from '../clock.js';
import { loadConfig, type Config } from '../config.js';
import { loadKeys, reloadKeys, type Keys } from '../keys.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import { rotateJwtKey } from './jwt-key-ring.js';
import { publishedAfterRetirementMs, signingLeadSeconds } from './jwt-key-timeline.js';

/**
 * A rotation as other people's verifiers live it (issue 28, items 11 and 12), on default settings:
 * two Plaza processes reading the keys at different intervals behind one address (round robin),
 * jose's createRemoteJWKSet on its DEFAULT options (30 s cooldown, 10 min cache), and a verifier
 * behind an HTTP cache that keeps each copy of the JWKS for its Cache-Control max-age. Every token
 * either process mints across the rotation must verify at once in both, and each process must sign
 * with the key that the database's timeline names for that instant, never another.
 * jose times its cache and cooldown with Date.now(): Date is mocked to follow the test's clock.
 */

const subject = { userId: 1, sessionId: '00000000-0000-4000-8000-000000000000', sellerId: 1, role: 'seller' as const, marketplaceCode: null };

interface Process {
  name: string;
  config: Config;
  keys: Keys;
  app: App;
  url: string;
  nextReload: number;
}

/** A verifier behind an HTTP cache: a copy of the JWKS is used until its max-age has passed, unknown kid or not. */
class HttpCachedVerifier {
  private copy: { keys: ReturnType<typeof createLocalJWKSet>; expires: number } | undefined;
  constructor(
    private readonly url: string,
    private readonly clock: ManualClock,
  ) {}
  async keySet() {
    const now = this.clock.now().getTime();
    if (!this.copy || now >= this.copy.expires) {
      const response = await fetch(this.url);
      const maxAge = /max-age=(\d+)/.exec(response.headers.get('cache-control') ?? '')?.[1];
      assert.ok(maxAge, 'the JWKS is cacheable');
      this.copy = { keys: createLocalJWKSet((await response.json()) as JSONWebKeySet), expires: now + Number(maxAge) * 1000 };
    }
    return this.copy.keys;
  }
}

describe('JWT key rotation, as verifiers see it', () => {
  let db: TestDatabase;
  const clock = new ManualClock(new Date());
  const processes: Process[] = [];
  let balancer: Server;
  let jwksUrl: string;

  before(async () => {
    db = await createTestDatabase();
    const secretsKey = randomBytes(32).toString('base64');
    // Default timeline settings (JWKS max-age 300 s, verifier cooldown 30 s); reload intervals differ.
    for (const [name, reload] of [['a', '3'], ['b', '30']] as const) {
      const config = loadConfig({ LOG_LEVEL: 'silent', SECRETS_KEY: secretsKey, JWT_KEYS_RELOAD_SECONDS: reload });
      const keys = await loadKeys(config, db, clock);
      const app = await buildApp({ config, db, keys, clock, logger: false });
      const url = `${await app.listen({ host: '127.0.0.1', port: 0 })}/.well-known/jwks.json`;
      processes.push({ name, config, keys, app, url, nextReload: clock.now().getTime() + config.JWT_KEYS_RELOAD_SECONDS * 1000 });
    }
    // One address for both processes, each request to the next one, as a load balancer would.
    let turn = 0;
    balancer = createServer((_request, response) => {
      const target = processes[turn++ % processes.length]!;
      fetch(target.url).then(
        async (upstream) => {
          response.writeHead(upstream.status, { 'content-type': 'application/json', 'cache-control': upstream.headers.get('cache-control') ?? '' });
          response.end(await upstream.text());
        },
        () => response.writeHead(502).end(),
      );
    });
    await new Promise<void>((resolve) => balancer.listen(0, '127.0.0.1', resolve));
    const address = balancer.address();
    jwksUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/.well-known/jwks.json`;
    mock.timers.enable({ apis: ['Date'], now: clock.now().getTime() });
  });

  after(async () => {
    mock.timers.reset();
    await new Promise((resolve) => balancer.close(resolve));
    for (const process of processes) await process.app.close();
    await db.close();
  });

  /** Moves the test's clock and Date together, and runs each process's reload timer when due. */
  async function advance(ms: number) {
    clock.advance(ms);
    mock.timers.tick(ms);
    for (const process of processes) {
      if (clock.now().getTime() < process.nextReload) continue;
      await reloadKeys(process.keys);
      process.nextReload += process.config.JWT_KEYS_RELOAD_SECONDS * 1000;
    }
  }

  test('every token minted across a rotation verifies at once with jose on default options and behind an HTTP cache; each process signs by the timeline', async () => {
    const config = processes[0]!.config;
    const options = () => ({ issuer: config.JWT_ISSUER, audience: config.JWT_AUDIENCE, algorithms: ['ES256'], currentDate: clock.now() });
    // A verifier's outcome depends on when it last fetched the JWKS: verifiers join every minute
    // from the rotation, and every 5 s in the 40 s before the new key signs (jose's cooldown),
    // each making its first fetch then, and each is checked for 340 s (the max-age, the cooldown
    // and some); the first pair stays for the whole test.
    const verifiers: { since: number; remote: ReturnType<typeof createRemoteJWKSet>; cached: HttpCachedVerifier }[] = [];
    const join = () => verifiers.push({ since: clock.now().getTime(), remote: createRemoteJWKSet(new URL(jwksUrl)), cached: new HttpCachedVerifier(jwksUrl, clock) });
    const verifyBoth = async (token: string, what: string) => {
      for (const [index, verifier] of verifiers.entries()) {
        if (index > 0 && clock.now().getTime() - verifier.since > 340_000) continue;
        const joined = `joined ${(clock.now().getTime() - verifier.since) / 1000} s before`;
        await jwtVerify(token, verifier.remote, options()).catch((error: Error) => assert.fail(`createRemoteJWKSet (${joined}) refused ${what}: ${error.message}`));
        await jwtVerify(token, await verifier.cached.keySet(), options()).catch((error: Error) => assert.fail(`the HTTP-cached verifier (${joined}) refused ${what}: ${error.message}`));
      }
    };
    join();

    // Both verifiers fetch the JWKS before the rotation and hold it.
    const oldKid = processes[0]!.keys.signing.kid;
    await verifyBoth(await issueAccessToken(processes[0]!.keys, config, subject, clock.now()), 'a token before the rotation');
    await advance(20_000);
    join();

    const rotated = await rotateJwtKey(db, processes[0]!.keys.secrets.key, config, clock);
    const signsFrom = rotated.signsFrom.getTime();
    const rotatedAt = rotated.publishedAt.getTime();
    assert.equal(signsFrom - clock.now().getTime(), signingLeadSeconds(config) * 1000);
    const end = signsFrom + publishedAfterRetirementMs(config) + 60_000;
    let lastOld: { token: string; expires: number } | undefined;
    let minted = 0;
    while (clock.now().getTime() < end) {
      // Steps of 5 s from the rotation, of 1 s in the 45 s either side of signsFrom; one of them
      // lands exactly on it.
      const near = Math.abs(clock.now().getTime() - signsFrom) < 45_000;
      await advance(near ? 1000 : 5000);
      const now = clock.now().getTime();
      const sinceRotation = now - rotatedAt;
      if (sinceRotation % 60_000 === 0 || (now >= signsFrom - 40_000 && now <= signsFrom + 5000 && sinceRotation % 5000 === 0)) join();
      for (const process of processes) {
        const token = await issueAccessToken(process.keys, process.config, subject, clock.now());
        const { kid } = decodeProtectedHeader(token);
        const when = `${(now - signsFrom) / 1000} s after signsFrom`;
        if (now < signsFrom) assert.equal(kid, oldKid, `process ${process.name} signed with the new key ${when}`);
        else assert.equal(kid, rotated.kid, `process ${process.name} signed with the retired key ${when}`);
        // Every token until the last verifier that could have missed the new key is past its
        // cache and cooldown; past that, one in ten seconds (the test stays short).
        if (now <= signsFrom + 340_000 || (now - rotatedAt) % 10_000 === 0) await verifyBoth(token, `process ${process.name}'s token of ${when}`);
        if (kid === oldKid) lastOld = { token, expires: decodeJwt(token).exp! * 1000 };
        minted++;
      }
      // The last tokens of the retired key stay valid until they expire (checked every 10 s).
      if (lastOld && now < lastOld.expires && (now - rotatedAt) % 10_000 === 0) await verifyBoth(lastOld.token, `the retired key's last token, ${(now - signsFrom) / 1000} s after signsFrom`);
    }
    assert.ok(minted > 600);
    // The retired key has left every process's JWKS.
    for (const process of processes) assert.deepEqual(process.keys.jwks.map((k) => k.kid), [rotated.kid]);
  });
});
