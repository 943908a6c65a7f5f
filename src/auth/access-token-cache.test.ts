import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../config.js';
import { generateKeys } from '../keys.js';
import { AccessTokenVerifier, InvalidAccessTokenError, issueAccessToken } from './access-tokens.js';

const subject = { userId: 7, sessionId: '00000000-0000-4000-8000-000000000007', sellerId: 3, role: 'seller' as const, marketplaceCode: null };

test('a cached token stops working exactly when a freshly verified one would', async () => {
  const config = loadConfig({ JWT_CLOCK_TOLERANCE_SECONDS: '5' });
  const keys = await generateKeys();
  const issuedAt = new Date('2026-01-01T00:00:00Z');
  const token = await issueAccessToken(keys, config, subject, issuedAt);
  const verifier = new AccessTokenVerifier(keys, config);
  const at = (seconds: number) => new Date(issuedAt.getTime() + seconds * 1000);

  assert.equal((await verifier.verify(token, at(1))).userId, 7);
  assert.equal((await verifier.verify(token, at(904.9))).sellerId, 3, 'cached, within exp + leeway');
  await assert.rejects(verifier.verify(token, at(905)), InvalidAccessTokenError);
  // A fresh verifier agrees at both instants: the cache changes speed, not answers.
  assert.equal((await new AccessTokenVerifier(keys, config).verify(token, at(904.9))).userId, 7);
  await assert.rejects(new AccessTokenVerifier(keys, config).verify(token, at(905)), InvalidAccessTokenError);
});

test('a token differing by one character is verified on its own, not served from the cache', async () => {
  const config = loadConfig({});
  const keys = await generateKeys();
  const now = new Date();
  const token = await issueAccessToken(keys, config, subject, now);
  const verifier = new AccessTokenVerifier(keys, config);
  await verifier.verify(token, now);
  // Not the last character: its low bits are base64url padding, and changing them can decode to
  // the same signature. A character inside the signature always changes its bytes.
  const at = token.length - 10;
  const altered = `${token.slice(0, at)}${token[at] === 'A' ? 'B' : 'A'}${token.slice(at + 1)}`;
  await assert.rejects(verifier.verify(altered, now), InvalidAccessTokenError);
});

test('the cache is bounded', async () => {
  const config = loadConfig({});
  const keys = await generateKeys();
  const now = new Date();
  const verifier = new AccessTokenVerifier(keys, config, 2);
  const tokens = await Promise.all([1, 2, 3].map((userId) => issueAccessToken(keys, config, { ...subject, userId }, now)));
  for (const token of tokens) await verifier.verify(token, now);
  assert.equal((verifier as unknown as { verified: Map<string, unknown> }).verified.size, 2);
});
