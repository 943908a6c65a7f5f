import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { decodeProtectedHeader } from 'jose';
import { buildApp, type App } from '../app.js';
import { issueAccessToken } from '../auth/access-tokens.js';
import { ManualClock } from '../clock.js';
import { loadConfig, type Config } from '../config.js';
import type { Database } from '../db/database.js';
import { loadKeys, reloadKeys, type Keys } from '../keys.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import { decryptSecret, encryptSecret } from './secret-box.js';
import { seedMarketplace } from '../testing/fixtures.js';
import { rotateJwtKey } from './jwt-key-ring.js';
import { signingLeadSeconds } from './jwt-key-timeline.js';
import { rotateSecretsKey } from './rotate-secrets-key.js';
import { keyFilePath, SecretsKeyMismatchError } from './secrets-key.js';

const subject = { userId: 1, sessionId: '00000000-0000-4000-8000-000000000000', sellerId: 1, role: 'seller' as const, marketplaceCode: null };

describe('JWT keys in the database, JWKS and rotation', () => {
  let db: TestDatabase;
  let config: Config;
  let keys: Keys;
  let app: App;
  const clock = new ManualClock(new Date());

  before(async () => {
    db = await createTestDatabase();
    config = loadConfig({ LOG_LEVEL: 'silent', SECRETS_KEY: randomBytes(32).toString('base64'), JWKS_MAX_AGE_SECONDS: '120' });
    keys = await loadKeys(config, db, clock);
    app = await buildApp({ config, db, keys, clock, logger: false });
  });
  after(async () => {
    await app.close();
    await db.close();
  });

  test('JWKS publishes the signing key with kid, alg and use, cacheable, nothing private', async () => {
    const response = await app.inject({ url: '/.well-known/jwks.json' });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['cache-control'], 'public, max-age=120');
    const { keys: published } = response.json() as { keys: Record<string, string>[] };
    assert.equal(published.length, 1);
    // JWT_ALGORITHM's default: an EC P-256 key for ES256 (other algorithms: jwt-libraries.test.ts).
    assert.deepEqual(Object.keys(published[0]!).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    assert.equal(published[0]!.kid, keys.signing.kid);
    assert.equal(published[0]!.alg, 'ES256');
    assert.equal(published[0]!.use, 'sig');
    const { rows } = await db.query<{ private_key_encrypted: string }>(`SELECT private_key_encrypted FROM jwt_signing_keys`);
    assert.match(rows[0]!.private_key_encrypted, /^v1\./, 'the private key is stored encrypted');
  });

  test('a second process on the database signs with the same key', async () => {
    const other = await loadKeys(config, db, clock);
    assert.equal(other.signing.kid, keys.signing.kid);
  });

  test('rotate-jwt publishes the new key now, schedules its first signature and the old key\'s last', async () => {
    const oldKid = keys.signing.kid;
    const rotatedAt = clock.now().getTime();
    const rotated = await rotateJwtKey(db, keys.secrets.key, config, clock);
    // JWKS_MAX_AGE_SECONDS 120 here, JWT_VERIFIER_COOLDOWN_SECONDS 30 by default, 60 s to publish.
    assert.equal(signingLeadSeconds(config), 210);
    assert.equal(rotated.signsFrom.getTime(), rotatedAt + 210_000);
    assert.deepEqual(rotated.retired, [{ kid: oldKid, publishedUntil: new Date(rotated.signsFrom.getTime() + (config.ACCESS_TOKEN_TTL_SECONDS + config.JWT_CLOCK_TOLERANCE_SECONDS) * 1000) }]);
    const { rows } = await db.query<{ kid: string; created_at: Date; activates_at: Date; retired_at: Date | null }>(`SELECT kid, created_at, activates_at, retired_at FROM jwt_signing_keys ORDER BY activates_at`);
    assert.deepEqual(rows.map((row) => [row.kid, row.retired_at?.getTime() ?? null]), [[oldKid, rotated.signsFrom.getTime()], [rotated.kid, null]]);
    assert.equal(rows[1]!.created_at.getTime(), rotatedAt);

    // Published by every process at its next read, however soon; signing only from signsFrom, by
    // the timeline, whenever the process last read the keys.
    await reloadKeys(keys);
    assert.deepEqual(keys.jwks.map((k) => k.kid).sort(), [oldKid, rotated.kid].sort());
    const kidOf = async () => decodeProtectedHeader(await issueAccessToken(keys, config, subject, clock.now())).kid;
    clock.advance(209_999);
    assert.equal(await kidOf(), oldKid);
    clock.advance(1);
    assert.equal(await kidOf(), rotated.kid, 'the new key signs from signsFrom, and the old one no more');
    const response = await app.inject({ url: '/.well-known/jwks.json' });
    assert.deepEqual((response.json() as { keys: { kid: string }[] }).keys.map((k) => k.kid).sort(), [oldKid, rotated.kid].sort(), 'the old key stays published');

    // It leaves the JWKS when the last token it signed (just before signsFrom) has expired.
    clock.advance((config.ACCESS_TOKEN_TTL_SECONDS + config.JWT_CLOCK_TOLERANCE_SECONDS) * 1000 - 1);
    await reloadKeys(keys);
    assert.deepEqual(keys.jwks.map((k) => k.kid).sort(), [oldKid, rotated.kid].sort());
    clock.advance(1);
    await reloadKeys(keys);
    assert.deepEqual(keys.jwks.map((k) => k.kid), [rotated.kid]);
  });

  test('a second rotation before the first took effect: each key signs in turn, none is skipped early', async () => {
    const current = keys.signing.kid;
    const first = await rotateJwtKey(db, keys.secrets.key, config, clock);
    clock.advance(100_000);
    const second = await rotateJwtKey(db, keys.secrets.key, config, clock);
    assert.deepEqual(second.retired.map((r) => r.kid), [first.kid], 'the waiting key gets its end, the current one keeps its own');
    const kidOf = async () => decodeProtectedHeader(await issueAccessToken(keys, config, subject, clock.now())).kid;
    assert.equal(await kidOf(), current);
    clock.advance(first.signsFrom.getTime() - clock.now().getTime());
    assert.equal(await kidOf(), first.kid);
    clock.advance(second.signsFrom.getTime() - clock.now().getTime() - 1);
    assert.equal(await kidOf(), first.kid);
    clock.advance(1);
    assert.equal(await kidOf(), second.kid);
  });

  test('keys read longer ago than JWT_KEYS_RELOAD_SECONDS are read again before a signature; unreadable, nothing is signed', async () => {
    let down = false;
    const flaky: Database = { ...db, query: ((...args: Parameters<Database['query']>) => (down ? Promise.reject(new Error('database unreachable')) : db.query(...args))) as Database['query'] };
    const other = await loadKeys(config, flaky, clock);
    const rotated = await rotateJwtKey(db, keys.secrets.key, config, clock);
    // No timer runs here: the process has not read the keys since the rotation.
    clock.advance(rotated.signsFrom.getTime() - clock.now().getTime());
    assert.equal(decodeProtectedHeader(await issueAccessToken(other, config, subject, clock.now())).kid, rotated.kid);
    down = true;
    clock.advance((config.JWT_KEYS_RELOAD_SECONDS + 1) * 1000);
    await assert.rejects(issueAccessToken(other, config, subject, clock.now()), /database unreachable/);
    const jwks = await buildApp({ config, db: flaky, keys: other, clock, logger: false });
    const response = await jwks.inject({ url: '/.well-known/jwks.json' });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['cache-control'], 'no-store', 'keys that may lack a new one are not cached');
    await jwks.close();
  });
});

describe('SECRETS_KEY: one per installation, checked at start, rotatable', () => {
  let db: TestDatabase;
  const dataDir = mkdtempSync(join(tmpdir(), 'plaza-keys-'));
  before(async () => {
    db = await createTestDatabase();
    await seedMarketplace(db, 'MKT');
  });
  after(async () => {
    await db.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const insertWebhook = (secretsKey: Buffer, code: string, secret: string) =>
    db.query(
      `INSERT INTO webhooks (tenant_kind, tenant_id, marketplace_code, code, name, topic, callback_url, secret_encrypted, previous_secret_encrypted)
       VALUES ('admin', '*', 'MKT', $1, $1, 'order/create', 'https://receiver.example/hook', $2, $2)`,
      [code, encryptSecret(secretsKey, secret)],
    );

  test('a process whose key differs refuses to start, naming the key and both fingerprints', async () => {
    const first = await loadKeys(loadConfig({ DATA_DIR: join(dataDir, 'machine-a') }), db);
    await insertWebhook(first.webhookSecretsKey, 'h1', 'whsec_one');
    // Another machine with its own DATA_DIR (or a lost keys.json) would generate another key: refused,
    // not silently different, and the key file it generated is gone again, not left in the way.
    const otherDir = join(dataDir, 'machine-b');
    await assert.rejects(loadKeys(loadConfig({ DATA_DIR: otherDir }), db), (error: Error) => {
      assert.ok(error instanceof SecretsKeyMismatchError);
      assert.ok(error.message.startsWith(`SECRETS_KEY missing: ${keyFilePath(otherDir)} did not exist`), error.message);
      assert.match(error.message, /another key \(fingerprint [0-9a-f]{16}\)\. Give this process that key: copy keys\.json/);
      return true;
    });
    assert.equal(existsSync(keyFilePath(otherDir)), false);
    // A key from the environment that differs: named with both fingerprints.
    await assert.rejects(loadKeys(loadConfig({ SECRETS_KEY: randomBytes(32).toString('base64') }), db), (error: Error) => {
      assert.ok(error instanceof SecretsKeyMismatchError);
      assert.match(error.message, /SECRETS_KEY differs: this process's key \(from SECRETS_KEY, fingerprint [0-9a-f]{16}\) is not the one .* \(fingerprint [0-9a-f]{16}\)/);
      return true;
    });
    // The same key from the environment is fine.
    const fileKey = JSON.parse(readFileSync(keyFilePath(join(dataDir, 'machine-a')), 'utf8')).secretsKey as string;
    await loadKeys(loadConfig({ SECRETS_KEY: fileKey }), db);
  });

  test('rotate-secrets-key re-encrypts every secret in one transaction; the old key is refused afterwards', async () => {
    const config = loadConfig({ DATA_DIR: join(dataDir, 'machine-a') });
    const before = await loadKeys(config, db);
    const next = randomBytes(32);
    const moved = await rotateSecretsKey(db, before.secrets, next, new Date());
    assert.equal(moved.webhooks, 1);
    assert.ok(moved.jwtKeys >= 1);
    const after = await loadKeys(loadConfig({ SECRETS_KEY: next.toString('base64') }), db);
    const { rows } = await db.query<{ secret_encrypted: string; previous_secret_encrypted: string }>(`SELECT secret_encrypted, previous_secret_encrypted FROM webhooks WHERE code = 'h1'`);
    assert.equal(decryptSecret(after.webhookSecretsKey, rows[0]!.secret_encrypted), 'whsec_one');
    assert.equal(decryptSecret(after.webhookSecretsKey, rows[0]!.previous_secret_encrypted), 'whsec_one');
    assert.throws(() => decryptSecret(before.webhookSecretsKey, rows[0]!.secret_encrypted));
    assert.equal(after.signing.kid, before.signing.kid, 'the JWT keys moved too, unchanged');
    await assert.rejects(loadKeys(config, db), SecretsKeyMismatchError);
  });

  test('a rotation that fails changes nothing', async () => {
    const current = { key: randomBytes(32), source: 'SECRETS_KEY' };
    const { rows: beforeRows } = await db.query(`SELECT secret_encrypted FROM webhooks ORDER BY id`);
    await assert.rejects(rotateSecretsKey(db, current, randomBytes(32), new Date()), SecretsKeyMismatchError);
    const { rows: afterRows } = await db.query(`SELECT secret_encrypted FROM webhooks ORDER BY id`);
    assert.deepEqual(afterRows, beforeRows);
  });
});
