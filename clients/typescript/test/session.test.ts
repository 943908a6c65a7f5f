import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { FileTokenStore, MemoryTokenStore, NotLoggedInError, PlazaApiError, PlazaClient, PlazaSession } from '../src/index.js';
import { fakeServer, json } from './fake-server.js';

/** A Plaza-like auth server: rotating refresh tokens with reuse detection, like the real one. */
async function authServer() {
  let serial = 0;
  let access = new Set<string>();
  const refresh = new Map<string, 'active' | 'rotated'>();
  const state = { refreshes: 0, reuseDetected: false };
  const pair = () => {
    serial++;
    const pairTokens = { token: `access-${serial}`, refresh_token: `refresh-${serial}` };
    access.add(pairTokens.token);
    refresh.set(pairTokens.refresh_token, 'active');
    return { ...pairTokens, user_id: 1, user_name: 'alice', seller_id: 42, expires_in: 900, token_type: 'Bearer' };
  };
  const server = await fakeServer(async (request, response) => {
    // Slow enough that concurrent callers overlap with the refresh.
    await new Promise((resolve) => setTimeout(resolve, 20));
    if (request.url.pathname === '/api/v2/auth/login') return json(response, 200, pair());
    if (request.url.pathname === '/api/v2/auth/refresh') {
      state.refreshes++;
      const presented = (JSON.parse(request.body) as { refresh_token: string }).refresh_token;
      const status = refresh.get(presented);
      if (status === 'rotated') {
        state.reuseDetected = true;
        refresh.clear();
        access = new Set();
      }
      if (status !== 'active') return json(response, 401, { code: 'invalid_refresh_token' });
      refresh.set(presented, 'rotated');
      return json(response, 200, pair());
    }
    const bearer = request.headers.authorization?.replace(/^Bearer /, '') ?? '';
    if (!access.has(bearer)) return json(response, 401, { code: 'unauthorized' });
    return json(response, 200, { ok: bearer });
  });
  return { server, state, revokeAccess: () => (access = new Set()) };
}

test('50 calls at once after the access token expired share one refresh; none trips reuse detection', async () => {
  const { server, state } = await authServer();
  let now = Date.UTC(2026, 0, 1);
  try {
    const session = new PlazaSession({ baseUrl: server.url, now: () => now });
    const login = await session.login('alice', 'secret');
    assert.equal(login.token, 'access-1');
    const client = new PlazaClient({ baseUrl: server.url, session });
    now += 16 * 60 * 1000;
    const answers = await Promise.all(Array.from({ length: 50 }, () => client.request<{ ok: string }>('GET', '/api/v2/auth/sessions')));
    assert.equal(state.refreshes, 1);
    assert.equal(state.reuseDetected, false);
    assert.ok(answers.every((answer) => answer.body.ok === 'access-2'));
    // Once more later: one more refresh, with the stored (second) refresh token.
    now += 16 * 60 * 1000;
    await Promise.all(Array.from({ length: 10 }, () => client.request('GET', '/api/v2/auth/sessions')));
    assert.equal(state.refreshes, 2);
    assert.equal(state.reuseDetected, false);
  } finally {
    await server.close();
  }
});

test('50 calls that get 401 with a token not yet expired (revoked, or a clock behind) share one refresh and are made again', async () => {
  const { server, state, revokeAccess } = await authServer();
  try {
    const session = new PlazaSession({ baseUrl: server.url });
    await session.login('alice', 'secret');
    const client = new PlazaClient({ baseUrl: server.url, session });
    revokeAccess();
    const answers = await Promise.all(Array.from({ length: 50 }, () => client.request<{ ok: string }>('GET', '/api/v2/auth/sessions')));
    assert.equal(state.refreshes, 1);
    assert.equal(state.reuseDetected, false);
    assert.ok(answers.every((answer) => answer.body.ok === 'access-2'));
  } finally {
    await server.close();
  }
});

test('a refused refresh token empties the store: the next call says to log in', async () => {
  const { server } = await authServer();
  const store = new MemoryTokenStore({ accessToken: 'old', refreshToken: 'unknown', accessTokenExpiresAt: 0 });
  try {
    const client = new PlazaClient({ baseUrl: server.url, session: new PlazaSession({ baseUrl: server.url, store }) });
    const error = await client.request('GET', '/api/v2/auth/sessions').catch((error: unknown) => error);
    assert.ok(error instanceof PlazaApiError && error.code === 'invalid_refresh_token');
    assert.equal(store.load(), undefined);
    await assert.rejects(client.request('GET', '/api/v2/auth/sessions'), NotLoggedInError);
  } finally {
    await server.close();
  }
});

test('FileTokenStore keeps both tokens in a 0600 file that a new session picks up', async () => {
  const { server, state } = await authServer();
  const dir = mkdtempSync(join(tmpdir(), 'plaza-client-'));
  const path = join(dir, 'tokens', 'alice.json');
  let now = Date.UTC(2026, 0, 1);
  try {
    await new PlazaSession({ baseUrl: server.url, store: new FileTokenStore(path), now: () => now }).login('alice', 'secret');
    assert.equal(statSync(path).mode & 0o777, 0o600);
    now += 16 * 60 * 1000;
    const later = new PlazaSession({ baseUrl: server.url, store: new FileTokenStore(path), now: () => now });
    assert.equal(await later.accessToken(), 'access-2');
    assert.equal(state.refreshes, 1);
    assert.equal((await new FileTokenStore(path).load())?.refreshToken, 'refresh-2');
    await later.logout();
    assert.equal(await new FileTokenStore(path).load(), undefined);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await server.close();
  }
});
