export { PlazaClient, type ClientOptions } from './client.js';
export { PlazaSession, type SessionOptions } from './session.js';
export { MemoryTokenStore, FileTokenStore, type StoredTokens, type TokenStore } from './token-store.js';
export { NotificationFeed, type FeedOptions } from './feed.js';
export { verifyNotification, signNotification, WebhookVerificationError, type VerifyOptions, type VerifiedNotification, type VerifyFailure } from './verify.js';
export { PlazaApiError, MfaRequiredError, NotLoggedInError } from './errors.js';
export { parseRetryAfter, type RetryOptions, type Fetch, type Sleep } from './http.js';
export type * from './types.js';
