import { MfaRequiredError, NotLoggedInError, PlazaApiError } from './errors.js';
import { Http, type HttpOptions } from './http.js';
import { MemoryTokenStore, type StoredTokens, type TokenStore } from './token-store.js';
import type { LoginResult } from './types.js';

export interface SessionOptions extends HttpOptions {
  /** Where both tokens are kept (default: memory). */
  store?: TokenStore;
  /** Refresh this long before the access token expires (default 30 s): a token does not expire in flight. */
  refreshMarginSeconds?: number;
  /** The clock, in milliseconds since the epoch (tests). */
  now?: () => number;
}

/**
 * A user's session: logs in, hands out a valid access token, and refreshes it **single-flight**:
 * however many calls find the token expired (or get 401 with it) at once, one `POST
 * /api/v2/auth/refresh` runs and every call waits for its result. Two refreshes with one refresh
 * token would be taken by Plaza for a stolen token (reuse detection ends every session of the user).
 * One session object per token store: two processes sharing a store must not refresh on their own.
 */
export class PlazaSession {
  readonly http: Http;
  private readonly store: TokenStore;
  private readonly marginMs: number;
  private readonly now: () => number;
  private refreshing: Promise<StoredTokens> | undefined;

  constructor(options: SessionOptions) {
    this.http = new Http(options);
    this.store = options.store ?? new MemoryTokenStore();
    this.marginMs = (options.refreshMarginSeconds ?? 30) * 1000;
    this.now = options.now ?? Date.now;
  }

  /** `POST /api/v2/auth/login`; stores both tokens. A user with a second factor: MfaRequiredError. */
  async login(username: string, password: string): Promise<LoginResult> {
    try {
      const { body } = await this.http.request<LoginResult>('POST', '/api/v2/auth/login', { body: { username, password } });
      await this.keep(body);
      return body;
    } catch (error) {
      if (error instanceof PlazaApiError && error.code === 'mfa_required' && error.problem) throw new MfaRequiredError(error.status, error.problem);
      throw error;
    }
  }

  /** `POST /api/v2/auth/mfa/verify` after MfaRequiredError: stores both tokens. */
  async verifyMfa(mfaToken: string, code: string): Promise<LoginResult> {
    const { body } = await this.http.request<LoginResult>('POST', '/api/v2/auth/mfa/verify', { body: { mfa_token: mfaToken, code } });
    await this.keep(body);
    return body;
  }

  /** An access token valid for at least the margin: the stored one, or a fresh one (single-flight refresh). */
  async accessToken(): Promise<string> {
    const tokens = await this.store.load();
    if (!tokens) throw new NotLoggedInError();
    if (tokens.accessTokenExpiresAt - this.marginMs > this.now()) return tokens.accessToken;
    return (await this.refresh(tokens.accessToken)).accessToken;
  }

  /**
   * A request was refused with 401 using `rejected`: refresh, unless another call already did
   * (the stored token is no longer the one refused), and give the token to retry with.
   */
  async tokenAfterUnauthorized(rejected: string): Promise<string> {
    const tokens = await this.store.load();
    if (!tokens) throw new NotLoggedInError();
    if (tokens.accessToken !== rejected) return tokens.accessToken;
    return (await this.refresh(rejected)).accessToken;
  }

  /**
   * `POST /api/v2/auth/refresh`, at most one at a time: a call while one runs gets its result. Only
   * the token `replacing` is refreshed: when the store already holds another (a refresh finished
   * meanwhile), that one is returned. A refused refresh token (401) empties the store: log in again.
   */
  refresh(replacing?: string): Promise<StoredTokens> {
    this.refreshing ??= this.rotate(replacing).finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  /** `POST /api/v2/auth/logout`, then forgets the tokens (also when the server already ended the session). */
  async logout(): Promise<void> {
    const tokens = await this.store.load();
    try {
      if (tokens) await this.http.request('POST', '/api/v2/auth/logout', { headers: { authorization: `Bearer ${tokens.accessToken}` } });
    } catch (error) {
      if (!(error instanceof PlazaApiError && error.status === 401)) throw error;
    } finally {
      await this.store.save(undefined);
    }
  }

  private async rotate(replacing: string | undefined): Promise<StoredTokens> {
    const tokens = await this.store.load();
    if (!tokens) throw new NotLoggedInError();
    if (replacing !== undefined && tokens.accessToken !== replacing && tokens.accessTokenExpiresAt - this.marginMs > this.now()) return tokens;
    try {
      const { body } = await this.http.request<LoginResult>('POST', '/api/v2/auth/refresh', { body: { refresh_token: tokens.refreshToken } });
      return await this.keep(body);
    } catch (error) {
      if (error instanceof PlazaApiError && (error.code === 'invalid_refresh_token' || error.status === 403)) await this.store.save(undefined);
      throw error;
    }
  }

  private async keep(result: LoginResult): Promise<StoredTokens> {
    const tokens = { accessToken: result.token, refreshToken: result.refresh_token, accessTokenExpiresAt: this.now() + result.expires_in * 1000 };
    await this.store.save(tokens);
    return tokens;
  }
}
