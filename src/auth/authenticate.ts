import type { FastifyReply, FastifyRequest } from 'fastify';
import { inactiveTenantOf, isPrincipalTenantActive } from '../accounts/tenant-state.js';
import { isForeignKeyViolation } from '../db/database.js';
import type { FeatureDeps } from '../deps.js';
import { AppError } from '../http/errors.js';
import type { Keys } from '../keys.js';
import { AccessTokenVerifier, InvalidAccessTokenError } from './access-tokens.js';
import type { UserPrincipal } from '../accounts/principal.js';
import { principalOf } from '../http/principal.js';
import { isWellFormedApiKey } from './api-keys.js';
import { authenticateApiKey } from './api-keys.service.js';
import { SessionLiveness } from './session-liveness.js';
import { DPOP_CHALLENGE, invalidDpopProof, requestUrl, verifyDpopProof } from './dpop-proof.js';
import { recordProof, replayedProof } from './dpop-replay.js';

const API_KEY_BEARER = /^Bearer (plz_.*)$/i;
const BEARER = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*)$/i;
// RFC 9449 §7.1: a DPoP-bound access token (auth schemes are case-insensitive, RFC 9110).
const DPOP = /^DPoP ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*)$/i;

/** 401 for a credential that is not (or no longer) good, with the header RFC 6750 asks for. */
export function unauthorized(detail: string): AppError {
  return new AppError('unauthorized', detail, { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } });
}

/** RFC 9449 §7.1: 401 for a token presented with the DPoP scheme carries the DPoP challenge. */
const invalidDpopToken = (detail: string) =>
  new AppError('unauthorized', detail, { headers: { 'www-authenticate': `DPoP error="invalid_token", ${DPOP_CHALLENGE.slice('DPoP '.length)}` } });

/** RFC 9449 §7.2: a bound token presented as a bearer token is refused, with the DPoP challenge. */
const boundTokenAsBearer = () => invalidDpopToken('This access token is bound to a DPoP key: send it as Authorization: DPoP <token> with a DPoP proof.');

export const USER_GONE = 'The user of this access token no longer exists.';

/**
 * An access token is stateless: it outlives its user's deletion (at most ACCESS_TOKEN_TTL_SECONDS).
 * A write that records the user as its maker (an event, a portal link) then fails on the named
 * foreign key; this turns that into 401 rather than 500: `insert(…).catch(refuseIfUserGone(fk))`.
 */
export const refuseIfUserGone =
  (constraint: string) =>
  (error: unknown): never => {
    throw isForeignKeyViolation(error, constraint) ? unauthorized(USER_GONE) : error;
  };

// One verifier (and cache) per key set, shared by every route plugin of an app.
const verifiers = new WeakMap<Keys, AccessTokenVerifier>();
// One session cache per database (so per app), shared by every route plugin of it.
const livenesses = new WeakMap<object, SessionLiveness>();

export const SESSION_ENDED = 'The session of this access token has ended.';

/** ACCESS_TOKEN_REVOCATION=session: the app's session cache; undefined when off. */
function sessionLivenessFor({ config, clock, db }: Pick<FeatureDeps, 'config' | 'clock' | 'db'>): SessionLiveness | undefined {
  if (config.ACCESS_TOKEN_REVOCATION !== 'session') return undefined;
  const periodMs = config.SESSION_CHECK_CACHE_SECONDS * 1000;
  let liveness = livenesses.get(db);
  if (liveness?.clock !== clock || liveness.periodMs !== periodMs) livenesses.set(db, (liveness = new SessionLiveness(db, clock, periodMs)));
  return liveness;
}

/** The 401 for a credential whose seller or marketplace is deactivated, with the challenge of the scheme the request used. */
export function tenantDeactivated(request: FastifyRequest, role: UserPrincipal['role']): AppError {
  const refuse = DPOP_SCHEME.test(request.headers.authorization ?? '') ? invalidDpopToken : unauthorized;
  return refuse(`The ${inactiveTenantOf(role)} of this access token is deactivated.`);
}

const DPOP_SCHEME = /^DPoP /i;

export interface AuthenticateOptions {
  /**
   * The route reads the tenant's state in its own statement, with its rows, and refuses with
   * tenantDeactivated() before it answers anything else (src/webhooks/webhook-list.ts): the
   * separate probe is then one round trip too many. Bearer access tokens only: a DPoP request still
   * gets the probe here, before its proof is recorded, and an API key's lookup checks its tenant anyway.
   */
  tenantStateReadByRoute?: boolean;
}

/**
 * A hook that requires `Authorization: Bearer <access token or API key>` and sets
 * request.principal. Routes run it in onRequest, before the body is read: a caller without a
 * token costs no parsing.
 */
export function authenticate({ keys, config, clock, db }: FeatureDeps, options: AuthenticateOptions = {}) {
  let verifier = verifiers.get(keys);
  if (verifier?.config !== config) verifiers.set(keys, (verifier = new AccessTokenVerifier(keys, config)));
  const tokens = verifier;
  const sessions = sessionLivenessFor({ config, clock, db });
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const header = request.headers.authorization;
    if (!header) throw new AppError('unauthorized', 'Send Authorization: Bearer <access token>.', { headers: { 'www-authenticate': 'Bearer' } });
    // API keys are accepted wherever an access token is (src/auth/api-keys.ts).
    const apiKey = API_KEY_BEARER.exec(header)?.[1];
    if (apiKey !== undefined) {
      if (!isWellFormedApiKey(apiKey)) throw unauthorized('The API key is invalid or revoked.');
      request.principal = await authenticateApiKey(db, apiKey, clock.now(), config.API_KEY_LAST_USED_RESOLUTION_SECONDS);
      return;
    }
    const bearer = BEARER.exec(header);
    const dpop = bearer ? null : DPOP.exec(header);
    const token = (bearer ?? dpop)?.[1];
    if (token === undefined) throw unauthorized('The Authorization header does not carry a bearer access token.');
    // The challenge follows the scheme the client used: a DPoP client is told to come back with DPoP.
    const refuse = dpop ? invalidDpopToken : unauthorized;
    const now = clock.now();
    let principal: UserPrincipal;
    try {
      principal = await tokens.verify(token, now);
    } catch (error) {
      if (error instanceof InvalidAccessTokenError) throw refuse('The access token is invalid or expired.');
      throw error;
    }
    // A bound token is only half a credential: the other half is the key, shown by a proof. Checked
    // before the session: it costs no query.
    if (bearer && principal.dpopJkt !== undefined) throw boundTokenAsBearer();
    if (dpop && principal.dpopJkt === undefined) throw unauthorized('This access token is not bound to a DPoP key: send it as Authorization: Bearer <token>.');
    // Opt-in (ACCESS_TOKEN_REVOCATION=session): an ended session ends its access tokens within
    // SESSION_CHECK_CACHE_SECONDS, not at their expiry; a cache hit costs no query.
    if (sessions && !(await sessions.isAlive(principal.sessionId, principal.userId))) throw refuse(SESSION_ENDED);
    // The token itself is stateless; its tenant's state is not: a deactivated seller or
    // marketplace is refused from the next request on, in every process (one primary-key probe).
    // A route that reads the state with its rows does it there, in the same round trip.
    if (!(bearer && options.tenantStateReadByRoute) && !(await isPrincipalTenantActive(db, principal))) {
      throw refuse(`The ${inactiveTenantOf(principal.role)} of this access token is deactivated.`);
    }
    if (dpop) {
      const proof = await verifyDpopProof(request.headers.dpop, { method: request.method, url: requestUrl(request), accessToken: token, now, windowSeconds: config.DPOP_PROOF_WINDOW_SECONDS });
      if (proof.jkt !== principal.dpopJkt) throw invalidDpopProof('The DPoP proof is signed with another key than the one the access token is bound to.');
      // Last, once token and proof are good: only their holder writes to the replay store.
      if (!(await recordProof(db, proof))) throw replayedProof();
    }
    request.principal = principal;
  };
}


/** The principal of a route that acts on the user's own account or sessions: API keys have neither (403). */
export function userPrincipalOf(request: FastifyRequest): UserPrincipal {
  const principal = principalOf(request);
  if (principal.apiKeyId !== undefined) throw new AppError('forbidden', 'An API key has no user or session; this needs a user\'s access token.');
  return principal;
}
