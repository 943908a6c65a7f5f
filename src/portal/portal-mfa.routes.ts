import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import QRCode from 'qrcode';
import { Type } from 'typebox';
import { findUserById } from '../accounts/accounts.repository.js';
import type { LoginGuards } from '../auth/login-guards.js';
import { MFA_CODE_MAX_LENGTH, MFA_TOKEN_MAX_LENGTH } from '../auth/mfa/mfa-fields.js';
import { challengeUser, verifyLoginCode } from '../auth/mfa/mfa-login.js';
import { deleteChallenge, findChallenge } from '../auth/mfa/mfa.repository.js';
import { passkeysOf } from '../auth/mfa/passkeys.repository.js';
import { activateTotp, disableTotp, replaceRecoveryCodesAudited, secondFactorStatus, startTotpEnrolment } from '../auth/mfa/mfa.service.js';
import { originOf } from '../auth/request-origin.js';
import type { TokenPair } from '../auth/token-pair.js';
import type { FeatureDeps } from '../deps.js';
import { credentialsBodyLimit } from '../http/body-limits.js';
import { AppError } from '../http/errors.js';
import type { Html } from './html.js';
import { assertSameOrigin, CsrfField } from './portal-security.js';
import { sendPage, sessionOf, type PortalDeps } from './portal-pages.js';
import { loginPage } from './views/auth-pages.js';
import { mfaCodePage, recoveryCodesPage, requiredEnrolPage, securityPage, totpEnrolPage } from './views/mfa-pages.js';

const hide = { hide: true };
const CodeForm = Type.Object({ code: Type.String({ maxLength: MFA_CODE_MAX_LENGTH }), _csrf: CsrfField });
const TokenCodeForm = Type.Object({ mfa_token: Type.String({ maxLength: MFA_TOKEN_MAX_LENGTH }), code: Type.String({ maxLength: MFA_CODE_MAX_LENGTH }) });

/** A QR code of the otpauth URL, drawn here (qrcode, PNG): the secret goes to no other service. */
const qrOf = (url: string) => QRCode.toDataURL(url, { errorCorrectionLevel: 'M', margin: 2, width: 240 });

/** The AppError's message for a form, or the error itself when it is not the user's to fix. */
function formError(error: unknown): AppError {
  if (error instanceof AppError && error.status < 500) return error;
  throw error;
}

/**
 * The page that follows a sign-in whose password was right but which needs a second factor: the
 * code form (mfa_required), or the enrolment (mfa_enrollment_required, with a fresh secret).
 * Undefined for any other refusal.
 */
export async function secondFactorPage(deps: FeatureDeps, error: AppError): Promise<Html | undefined> {
  const mfaToken = error.options.extensions?.mfa_token;
  if (typeof mfaToken !== 'string') return undefined;
  if (error.code === 'mfa_required') {
    const user = await challengeUser(deps.db, await findChallenge(deps.db, mfaToken, 'login', deps.clock.now()));
    return mfaCodePage({ mfaToken, passkeys: (await passkeysOf(deps.db, user.id)).length > 0 });
  }
  const user = await challengeUser(deps.db, await findChallenge(deps.db, mfaToken, 'enroll', deps.clock.now()));
  const { secret, otpauth_url: url } = await startTotpEnrolment(deps, user.id);
  return requiredEnrolPage({ mfaToken, secret, qrDataUrl: await qrOf(url) });
}

type MfaPortalDeps = PortalDeps & {
  guards: LoginGuards;
  startPasswordSession: (request: FastifyRequest, reply: FastifyReply, pair: TokenPair) => Promise<void>;
};

/**
 * The portal's second factor: the code step of the sign-in, the enrolment a role requires, and the
 * account's security page (enrol, recovery codes, turn off). Every step is the API's own service
 * (src/auth/mfa), so the limits, single use and audit are the API's.
 */
export const portalMfaRoutes: FastifyPluginAsyncTypebox<MfaPortalDeps> = async (app, deps) => {
  const { db, clock, config, requireSession, guards } = deps;
  // The sign-in steps read no more than the API's login does, before anyone is signed in.
  const signIn = { bodyLimit: credentialsBodyLimit(config) };

  app.post('/portal/login/mfa', { ...signIn, schema: { ...hide, body: TokenCodeForm } }, async (request, reply) => {
    assertSameOrigin(request);
    const { mfa_token: mfaToken, code } = request.body;
    try {
      const pair = await verifyLoginCode(deps, guards, { mfaToken, code, origin: originOf(request) });
      await deps.startPasswordSession(request, reply, pair);
      return reply.redirect('/portal', 303);
    } catch (error) {
      const refusal = formError(error);
      if (refusal.options.headers?.['retry-after']) reply.header('retry-after', refusal.options.headers['retry-after']);
      // A dead token cannot be retried: back to the start.
      if (refusal.code === 'invalid_mfa_token') return sendPage(reply, loginPage({ error: refusal.detail }), refusal.status);
      return sendPage(reply, mfaCodePage({ mfaToken, error: refusal.detail }), refusal.status);
    }
  });

  app.post('/portal/login/enrol', { ...signIn, schema: { ...hide, body: TokenCodeForm } }, async (request, reply) => {
    assertSameOrigin(request);
    const { mfa_token: mfaToken, code } = request.body;
    const now = clock.now();
    const user = await challengeUser(db, await findChallenge(db, mfaToken, 'enroll', now));
    try {
      await activateTotp(deps, user.id, code, originOf(request));
    } catch (error) {
      const refusal = formError(error);
      const { secret, otpauth_url: url } = await startTotpEnrolment(deps, user.id);
      return sendPage(reply, requiredEnrolPage({ mfaToken, secret, qrDataUrl: await qrOf(url), error: `${refusal.detail} Scan the new QR code.` }), refusal.status);
    }
    await deleteChallenge(db, mfaToken);
    // Password and code were just proven: the codes can be shown now, once.
    const codes = await replaceRecoveryCodesAudited(deps, user, now, originOf(request));
    return sendPage(reply, recoveryCodesPage({}, codes, { href: '/portal/login', label: 'Now sign in with your code' }));
  });

  /** Account pages are for a user's own sign-in: a portal link acts as its maker, whose account it is not. */
  const accountSession = (request: FastifyRequest) => {
    const session = sessionOf(request);
    const userId = session.principal.userId;
    if (session.viaLink || userId === null) throw new AppError('forbidden', 'A portal link session has no account settings; sign in with your own user.');
    return { ...session, userId };
  };
  const contextOf = (request: FastifyRequest) => {
    const session = accountSession(request);
    return { signedInAs: session.displayName, csrfToken: session.csrfToken };
  };
  const showSecurity = async (request: FastifyRequest, reply: FastifyReply, extra: { notice?: string; error?: string } = {}, status = 200) => {
    const userId = accountSession(request).userId;
    const state = await secondFactorStatus(deps, userId);
    const passkeys = await passkeysOf(db, userId);
    return sendPage(reply, securityPage(contextOf(request), { totp: state.totp, recoveryCodesLeft: state.recovery_codes_left, passkeys, ...extra }), status);
  };

  app.get('/portal/account', { schema: hide, preHandler: requireSession }, async (request, reply) => showSecurity(request, reply));

  app.post('/portal/account/totp', { schema: hide, preHandler: requireSession }, async (request, reply) => {
    const session = accountSession(request);
    try {
      const { secret, otpauth_url: url } = await startTotpEnrolment(deps, session.userId);
      return sendPage(reply, totpEnrolPage(contextOf(request), { secret, qrDataUrl: await qrOf(url) }));
    } catch (error) {
      const refusal = formError(error);
      return showSecurity(request, reply, { error: refusal.detail }, refusal.status);
    }
  });

  app.post('/portal/account/totp/activate', { schema: { ...hide, body: CodeForm }, preHandler: requireSession }, async (request, reply) => {
    const session = accountSession(request);
    const userId = session.userId;
    try {
      await activateTotp(deps, userId, request.body.code, originOf(request));
    } catch (error) {
      const refusal = formError(error);
      if (refusal.code === 'conflict') return showSecurity(request, reply, { error: refusal.detail }, refusal.status);
      const { secret, otpauth_url: url } = await startTotpEnrolment(deps, userId);
      return sendPage(reply, totpEnrolPage(contextOf(request), { secret, qrDataUrl: await qrOf(url), error: `${refusal.detail} Scan the new QR code.` }), refusal.status);
    }
    const user = (await findUserById(db, userId))!;
    const codes = await replaceRecoveryCodesAudited(deps, user, clock.now(), originOf(request));
    return sendPage(reply, recoveryCodesPage(contextOf(request), codes, { href: '/portal/account', label: 'Back to sign-in security' }));
  });

  app.post('/portal/account/totp/disable', { schema: { ...hide, body: CodeForm }, preHandler: requireSession }, async (request, reply) => {
    const session = accountSession(request);
    try {
      await disableTotp(deps, guards.limiter, session.userId, request.body.code, originOf(request));
    } catch (error) {
      const refusal = formError(error);
      if (refusal.options.headers?.['retry-after']) reply.header('retry-after', refusal.options.headers['retry-after']);
      return showSecurity(request, reply, { error: refusal.detail }, refusal.status);
    }
    return showSecurity(request, reply, { notice: 'The authenticator app is off; signing in needs only the password now.' });
  });
};
