import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { Type } from 'typebox';
import { findUserById } from '../accounts/accounts.repository.js';
import type { LoginGuards } from '../auth/login-guards.js';
import { openSession } from '../auth/open-session.js';
import { MFA_TOKEN_MAX_LENGTH } from '../auth/mfa/mfa-fields.js';
import { challengeUser } from '../auth/mfa/mfa-login.js';
import { deleteChallenge, findChallenge } from '../auth/mfa/mfa.repository.js';
import { authenticatePasskey, authenticationOptions, registerPasskey, registrationOptions, type RelyingParty } from '../auth/mfa/passkeys.service.js';
import { deletePasskey } from '../auth/mfa/passkeys.repository.js';
import { recordAuthEvent } from '../auth/auth-events.repository.js';
import { originOf } from '../auth/request-origin.js';
import type { TokenPair } from '../auth/token-pair.js';
import { credentialsBodyLimit } from '../http/body-limits.js';
import { AppError, rateLimited } from '../http/errors.js';
import { TokenBuckets } from '../http/token-buckets.js';
import { assertSameOrigin, CsrfField, CsrfForm } from './portal-security.js';
import { sessionOf, type PortalDeps } from './portal-pages.js';

const hide = { hide: true };
// The browser's WebAuthn answer as @simplewebauthn/browser gives it; the library checks its contents.
const WebauthnAnswer = Type.Object({ id: Type.String({ maxLength: 1400 }), response: Type.Object({ clientDataJSON: Type.String({ maxLength: 8192 }) }) }, { additionalProperties: true });
const MfaTokenField = Type.Optional(Type.String({ maxLength: MFA_TOKEN_MAX_LENGTH }));

type PasskeyDeps = PortalDeps & {
  guards: LoginGuards;
  startPasswordSession: (request: FastifyRequest, reply: FastifyReply, pair: TokenPair) => Promise<void>;
};

/** The relying party is the origin the portal is on (writes are checked same-origin), or PORTAL_PUBLIC_URL. */
function relyingParty(request: FastifyRequest, publicUrl: string | undefined): RelyingParty {
  const origin = new URL(publicUrl ?? `${request.protocol}://${request.host}`).origin;
  return { origin, rpID: new URL(origin).hostname, name: 'Plaza' };
}

/**
 * Passkeys in the portal (JSON endpoints that public/portal/passkeys.js calls with
 * @simplewebauthn/browser, served by Plaza): register one from Sign-in security, sign in with one
 * alone, or use one instead of the code after a password.
 */
export const portalPasskeyRoutes: FastifyPluginAsyncTypebox<PasskeyDeps> = async (app, deps) => {
  const { db, clock, config, requireSession } = deps;
  const rpOf = (request: FastifyRequest) => relyingParty(request, config.PORTAL_PUBLIC_URL);

  const accountUser = async (request: FastifyRequest) => {
    const session = sessionOf(request);
    const userId = session.principal.userId;
    if (session.viaLink || userId === null) throw new AppError('forbidden', 'A portal link session has no account settings; sign in with your own user.');
    const user = await findUserById(db, userId);
    if (!user) throw new AppError('unauthorized');
    return user;
  };

  app.post('/portal/account/passkeys/options', { schema: { ...hide, body: CsrfForm }, preHandler: requireSession }, async (request) =>
    registrationOptions(deps, await accountUser(request), rpOf(request)),
  );

  app.post(
    '/portal/account/passkeys',
    { schema: { ...hide, body: Type.Object({ _csrf: CsrfField, name: Type.String({ minLength: 1, maxLength: 100 }), response: WebauthnAnswer }) }, preHandler: requireSession },
    async (request, reply) => {
      await registerPasskey(deps, await accountUser(request), request.body.response as unknown as RegistrationResponseJSON, rpOf(request), request.body.name, originOf(request));
      return reply.code(204).send();
    },
  );

  app.post(
    '/portal/account/passkeys/delete',
    { schema: { ...hide, body: Type.Object({ _csrf: CsrfField, id: Type.String({ maxLength: 1400 }) }) }, preHandler: requireSession },
    async (request, reply) => {
      const user = await accountUser(request);
      if (await deletePasskey(db, user.id, request.body.id)) {
        await recordAuthEvent(db, { type: 'mfa_removed', at: clock.now(), origin: originOf(request), userId: user.id, username: user.username, detail: { method: 'passkey' } });
      }
      return reply.redirect('/portal/account', 303);
    },
  );

  /** With an mfa_token (after a password), only that user's passkeys answer; without, any passkey names its user. */
  const tokenUser = async (token: string | undefined) =>
    token === undefined ? undefined : challengeUser(db, await findChallenge(db, token, 'login', clock.now()));

  // The sign-in's two steps need no account, so each costs its caller: a bucket per address.
  const perMinute = config.PASSKEY_SIGN_INS_PER_MINUTE_PER_IP;
  const signIns = new TokenBuckets(perMinute, perMinute / 60);
  const takeSignIn = (request: FastifyRequest) => {
    const wait = signIns.take(originOf(request).ip, 1, clock.now().getTime());
    if (wait > 0) throw rateLimited(wait, 'Too many passkey sign-ins from this address');
  };

  // The sign-in steps read no more than the API's login does, before anyone is signed in.
  const signIn = { bodyLimit: credentialsBodyLimit(config) };
  app.post('/portal/login/passkey/options', { ...signIn, schema: { ...hide, body: Type.Object({ mfa_token: MfaTokenField }) } }, async (request) => {
    assertSameOrigin(request);
    takeSignIn(request);
    const user = await tokenUser(request.body.mfa_token);
    return authenticationOptions(deps, rpOf(request), user?.id ?? null);
  });

  app.post('/portal/login/passkey', { ...signIn, schema: { ...hide, body: Type.Object({ mfa_token: MfaTokenField, response: WebauthnAnswer }) } }, async (request, reply) => {
    assertSameOrigin(request);
    takeSignIn(request);
    const expected = await tokenUser(request.body.mfa_token);
    const user = await authenticatePasskey(deps, request.body.response as unknown as AuthenticationResponseJSON, rpOf(request), originOf(request));
    if (expected && expected.id !== user.id) throw new AppError('invalid_mfa_code', 'This passkey is another user\'s.');
    if (request.body.mfa_token !== undefined && !(await deleteChallenge(db, request.body.mfa_token))) throw new AppError('invalid_mfa_token', 'The sign-in expired or was finished already; start over.');
    // The passkey (with user verification) is the whole sign-in: the user's state is read under
    // its lock when the session opens, as after a password.
    const pair = await openSession(deps, user, null, originOf(request), clock.now(), { auditDetail: { second_factor: 'passkey' } });
    await deps.startPasswordSession(request, reply, pair);
    return { redirect: '/portal' };
  });
};
