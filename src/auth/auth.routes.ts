import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { FeatureDeps } from '../deps.js';
import { credentialsBodyLimit } from '../http/body-limits.js';
import { problemResponses, problemWithExamples } from '../http/openapi.js';
import { authenticate, userPrincipalOf } from './authenticate.js';
import { tokenRequestProof } from './dpop-proof.js';
import { createLoginGuards } from './login-guards.js';
import { login } from './login.service.js';
import { prepareDummyHash } from './passwords.js';
import { refresh } from './refresh.service.js';
import { originOf } from './request-origin.js';
import { changeOwnPassword } from './password-change.service.js';
import { GivenPassword, NewPassword } from './password-bounds.js';
import { commonPasswordExample } from './password-strength.js';
import { sessionRoutes } from './sessions.routes.js';
import { logout, revokeAll } from './sessions.service.js';
import { UserName } from '../accounts/user-name.js';
import { mfaRoutes } from './mfa/mfa.routes.js';
import { secondFactorProblem } from './mfa/mfa-login.js';
import { DpopHeaders, EXAMPLE_MFA_TOKEN, EXAMPLE_REFRESH_TOKEN, proofRefusal, TokenPairSchema } from './token-pair-schema.js';

const LoginBody = Type.Object({
  username: UserName,
  password: GivenPassword,
}, { examples: [{ username: 'acme-api', password: 'correct horse battery staple' }] });

// Malformed but present tokens are a 401 (like unknown ones), not a 400.
const RefreshBody = Type.Object({ refresh_token: Type.String({ minLength: 1, maxLength: 1024 }) }, { examples: [{ refresh_token: EXAMPLE_REFRESH_TOKEN }] });

/** The 401s of a right password that needs more (mfa-login.ts), as a client meets them. */
const challenge = { mfa_token: EXAMPLE_MFA_TOKEN, expires_in: 300 };
const secondFactorNeeded = {
  mfa_required: { summary: 'The user has an authenticator app: finish with POST /api/v2/auth/mfa/verify {mfa_token, code}', error: secondFactorProblem('totp', challenge) },
  mfa_enrollment_required: {
    summary: 'The user\'s role requires a second factor and it has none: enrol with the mfa_token (POST /api/v2/auth/mfa/totp, then …/activate), then log in again',
    error: secondFactorProblem('enroll', challenge),
  },
};

export const authRoutes: FastifyPluginAsyncTypebox<FeatureDeps> = async (app, deps) => {
  const guards = createLoginGuards(deps);
  // Builds the dummy hash now, so that the first unknown-user login costs what later ones do.
  void prepareDummyHash().catch(() => {});
  app.addHook('onClose', async () => {
    await guards.close().catch((error: unknown) => app.log.warn({ err: error }, 'could not write the last counts of refused logins'));
  });
  const requireUser = authenticate(deps);

  app.post(
    '/api/v2/auth/login',
    {
      bodyLimit: credentialsBodyLimit(deps.config),
      schema: {
        operationId: 'login',
        tags: ['auth'],
        summary: 'Log in with user name and password',
        description: 'Returns an access token and a refresh token. 429 carries Retry-After and retry_after while a login limit cools down; 503 with Retry-After when too many password checks are in progress in the process (ARGON2_MAX_IN_PROGRESS). A user with a second factor gets 401 mfa_required with an mfa_token instead (finish with POST /api/v2/auth/mfa/verify); a user whose role requires one and who has none, 401 mfa_enrollment_required with an mfa_token that only enrols. With a DPoP header the session is bound to the proof\'s key (token_type DPoP); a bad proof is 401 invalid_dpop_proof.',
        headers: DpopHeaders,
        body: LoginBody,
        response: { 200: TokenPairSchema, ...problemResponses(400, 401, 403, 429, 503), ...proofRefusal(secondFactorNeeded) },
      },
    },
    async (request, reply) => {
      // Checked before the password (no database work): a bad proof costs no verification.
      const dpop = await tokenRequestProof(request, deps.clock.now(), deps.config.DPOP_PROOF_WINDOW_SECONDS);
      const result = await login(deps, guards, { ...request.body, origin: originOf(request), ...(dpop ? { dpop } : {}) });
      return reply.header('cache-control', 'no-store').send(result);
    },
  );

  app.post(
    '/api/v2/auth/refresh',
    {
      bodyLimit: credentialsBodyLimit(deps.config),
      schema: {
        operationId: 'refreshTokens',
        tags: ['auth'],
        summary: 'Rotate the refresh token',
        description: 'Revokes the presented refresh token (reason rotated) and returns a new pair. A rotated token presented again while its session is open revokes every refresh token of the user (401); a token of an ended session (logout, revoke-all, password change, deactivation, an earlier reuse) is only 401. Any token of a disabled user, or of a user of a deactivated seller or marketplace, is 403 user_inactive. A token of a DPoP-bound session needs a DPoP proof of its key (401 invalid_dpop_proof otherwise; the token is not consumed).',
        headers: DpopHeaders,
        body: RefreshBody,
        response: { 200: TokenPairSchema, ...problemResponses(400, 401, 403, 503), ...proofRefusal() },
      },
    },
    async (request, reply) => {
      const dpop = await tokenRequestProof(request, deps.clock.now(), deps.config.DPOP_PROOF_WINDOW_SECONDS);
      const result = await refresh(deps, request.body.refresh_token, originOf(request), dpop);
      return reply.header('cache-control', 'no-store').send(result);
    },
  );

  app.post(
    '/api/v2/auth/logout',
    {
      onRequest: requireUser,
      schema: {
        operationId: 'logout',
        tags: ['auth'],
        summary: 'End the current session',
        description: 'Revokes the refresh token of the session in the access token. The access token itself stays valid until it expires, unless ACCESS_TOKEN_REVOCATION=session, which ends it within SESSION_CHECK_CACHE_SECONDS (401 on every process).',
        security: [{ bearerAuth: [] }],
        response: { 204: Type.Null({ description: 'Logged out' }), ...problemResponses(401, 403, 503) },
      },
    },
    async (request, reply) => {
      await logout(deps.db, userPrincipalOf(request), originOf(request), deps.clock.now());
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/v2/auth/revoke-all',
    {
      onRequest: requireUser,
      schema: {
        operationId: 'revokeAllSessions',
        tags: ['auth'],
        summary: 'End every session of the user',
        description: 'Revokes every refresh token of the user and closes every session, this one included. Access tokens already issued stay valid until they expire, unless ACCESS_TOKEN_REVOCATION=session, which ends them within SESSION_CHECK_CACHE_SECONDS.',
        security: [{ bearerAuth: [] }],
        response: { 204: Type.Null({ description: 'Every session ended' }), ...problemResponses(401, 403, 503) },
      },
    },
    async (request, reply) => {
      await revokeAll(deps.db, userPrincipalOf(request), originOf(request), deps.clock.now());
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/v2/auth/password',
    {
      // Authenticated before the body is read; the body is two passwords.
      onRequest: requireUser,
      bodyLimit: credentialsBodyLimit(deps.config),
      schema: {
        tags: ['auth'],
        operationId: 'changePassword',
        summary: 'Change the user\'s password',
        description: 'Requires the current password (failures count towards the login limits). The new password must pass the strength rule (not a common or breached password, a zxcvbn score of at least PASSWORD_MIN_SCORE): 400 validation_failed on body.new_password with the reason otherwise. Ends every other session of the user; the current one stays.',
        security: [{ bearerAuth: [] }],
        body: Type.Object({
          current_password: GivenPassword,
          new_password: NewPassword,
        }, { additionalProperties: false, examples: [{ current_password: 'correct horse battery staple', new_password: 'quarry lantern juniper solstice' }] }),
        response: { 204: Type.Null({ description: 'Password changed' }), ...problemResponses(401, 403, 429, 503), 400: problemWithExamples(400, { common_password: commonPasswordExample('body.new_password') }) },
      },
    },
    async (request, reply) => {
      await changeOwnPassword(deps, guards.limiter, userPrincipalOf(request), { currentPassword: request.body.current_password, newPassword: request.body.new_password, origin: originOf(request) });
      return reply.code(204).send(null);
    },
  );

  await app.register(sessionRoutes, deps);
  await app.register(mfaRoutes, { ...deps, guards });
};
