import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { FeatureDeps } from '../../deps.js';
import { credentialsBodyLimit } from '../../http/body-limits.js';
import { AppError } from '../../http/errors.js';
import { problemResponses } from '../../http/openapi.js';
import { authenticate, userPrincipalOf } from '../authenticate.js';
import { tokenRequestProof } from '../dpop-proof.js';
import type { LoginGuards } from '../login-guards.js';
import { GivenPassword } from '../password-bounds.js';
import { originOf } from '../request-origin.js';
import { DpopHeaders, EXAMPLE_MFA_TOKEN, proofRefusal, TokenPairSchema } from '../token-pair-schema.js';
import { MFA_CODE_MAX_LENGTH, MFA_CODE_MIN_LENGTH, MFA_TOKEN_MAX_LENGTH } from './mfa-fields.js';
import { challengeUser, verifyLoginCode } from './mfa-login.js';
import { deleteChallenge, findChallenge } from './mfa.repository.js';
import { activateTotp, disableTotp, newRecoveryCodes, secondFactorStatus, startTotpEnrolment } from './mfa.service.js';

// A TOTP code (6 digits) or a recovery code (XXXX-XXXX-XXXX); spaces are ignored.
const Code = Type.String({ minLength: MFA_CODE_MIN_LENGTH, maxLength: MFA_CODE_MAX_LENGTH, description: 'A 6-digit code of the authenticator app, or (where stated) a recovery code.' });
const MfaToken = Type.String({ minLength: 1, maxLength: MFA_TOKEN_MAX_LENGTH, description: 'The mfa_token of a 401 mfa_required or mfa_enrollment_required login answer.' });

const TotpEnrolmentSchema = Type.Object(
  {
    secret: Type.String({ description: 'The shared secret in base32, for typing into an authenticator app.' }),
    otpauth_url: Type.String({ description: 'otpauth://totp/… URL, what a QR code for the app holds (SHA1, 6 digits, 30 s).' }),
  },
  {
    additionalProperties: false,
    examples: [{
      secret: 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP',
      otpauth_url: 'otpauth://totp/Plaza:acme-api?secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&issuer=Plaza&algorithm=SHA1&digits=6&period=30',
    }],
  },
);

const enrolmentDescription =
  'Authenticated with an access token, or, without one, with the `mfa_token` of a 401 `mfa_enrollment_required` login answer in the body (a user whose role requires a second factor and who has none).';

/** The mfa_token of a body that is not checked by a schema: a string of sane length, or nothing. */
function mfaTokenOf(body: unknown): string | undefined {
  const token = (body as { mfa_token?: unknown } | null | undefined)?.mfa_token;
  return typeof token === 'string' && token.length > 0 && token.length <= MFA_TOKEN_MAX_LENGTH ? token : undefined;
}

/** The second factor routes under /api/v2/auth/mfa; registered by authRoutes with its login guards. */
export const mfaRoutes: FastifyPluginAsyncTypebox<FeatureDeps & { guards: LoginGuards }> = async (app, deps) => {
  const { guards } = deps;
  const requireUser = authenticate(deps);

  /**
   * Enrolment routes take an access token or an enrolment mfa_token in the body. A request with an
   * Authorization header is authenticated before its body is read, like every authenticated route.
   */
  const userIfAuthorized = async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.headers.authorization !== undefined) await requireUser(request, reply);
  };

  /** The user an enrolment request acts for: the access token's, or an enrolment token's. */
  const enrollingUser = async (request: FastifyRequest, token: string | undefined): Promise<{ userId: number; enrolToken?: string }> => {
    if (request.principal) return { userId: userPrincipalOf(request).userId };
    if (token === undefined) throw new AppError('unauthorized', 'Send Authorization: Bearer <access token>, or the mfa_token of a mfa_enrollment_required login.', { headers: { 'www-authenticate': 'Bearer' } });
    const user = await challengeUser(deps.db, await findChallenge(deps.db, token, 'enroll', deps.clock.now()));
    return { userId: user.id, enrolToken: token };
  };

  app.get(
    '/api/v2/auth/mfa',
    {
      onRequest: requireUser,
      schema: {
        operationId: 'getSecondFactor',
        tags: ['auth'],
        summary: 'The user\'s second factor',
        security: [{ bearerAuth: [] }],
        response: {
          200: Type.Object(
            {
              totp: Type.Union([Type.Literal('none'), Type.Literal('pending'), Type.Literal('active')], { description: 'pending: enrolled, not yet activated with a code.' }),
              recovery_codes_left: Type.Integer({ description: 'Unused recovery codes.' }),
            },
            { additionalProperties: false, examples: [{ totp: 'active', recovery_codes_left: 9 }] },
          ),
          ...problemResponses(401, 403, 503),
        },
      },
    },
    async (request) => secondFactorStatus(deps, userPrincipalOf(request).userId),
  );

  app.post(
    '/api/v2/auth/mfa/totp',
    {
      onRequest: userIfAuthorized,
      bodyLimit: credentialsBodyLimit(deps.config),
      schema: {
        operationId: 'enrolTotp',
        tags: ['auth'],
        summary: 'Start enrolling an authenticator app (TOTP)',
        description: `No body with an access token; else the body is {"mfa_token": "…"}. Answers a new secret, not active until POST /api/v2/auth/mfa/totp/activate confirms a code of it; an earlier unconfirmed one is replaced. 409 while an authenticator is active. ${enrolmentDescription}`,
        security: [{ bearerAuth: [] }, {}],
        // No body schema: with an access token there is no body at all (a schema would require one).
        // Without, the body is {"mfa_token": "…"}, read below.
        response: { 201: TotpEnrolmentSchema, ...problemResponses(401, 403, 409, 503) },
      },
    },
    async (request, reply) => {
      const { userId } = await enrollingUser(request, mfaTokenOf(request.body));
      return reply.code(201).header('cache-control', 'no-store').send(await startTotpEnrolment(deps, userId));
    },
  );

  app.post(
    '/api/v2/auth/mfa/totp/activate',
    {
      onRequest: userIfAuthorized,
      bodyLimit: credentialsBodyLimit(deps.config),
      schema: {
        operationId: 'activateTotp',
        tags: ['auth'],
        summary: 'Activate the authenticator with a current code',
        description: `From then on a login asks for a code (401 mfa_required). No recovery codes come with this answer (204): get them with POST /api/v2/auth/mfa/recovery-codes. ${enrolmentDescription} Such a token is used up here: log in again, now with a code.`,
        security: [{ bearerAuth: [] }, {}],
        body: Type.Object({ code: Code, mfa_token: Type.Optional(MfaToken) }, { additionalProperties: false, examples: [{ code: '492039' }, { mfa_token: EXAMPLE_MFA_TOKEN, code: '492039' }] }),
        response: { 204: Type.Null({ description: 'Active' }), ...problemResponses(400, 401, 403, 409, 503) },
      },
    },
    async (request, reply) => {
      const { userId, enrolToken } = await enrollingUser(request, request.body.mfa_token);
      await activateTotp(deps, userId, request.body.code, originOf(request));
      if (enrolToken) await deleteChallenge(deps.db, enrolToken);
      return reply.code(204).send(null);
    },
  );

  app.delete(
    '/api/v2/auth/mfa/totp',
    {
      onRequest: requireUser,
      bodyLimit: credentialsBodyLimit(deps.config),
      schema: {
        operationId: 'disableTotp',
        tags: ['auth'],
        summary: 'Turn the second factor off',
        description: 'Needs a current code of the authenticator or an unused recovery code (counted by the login limits like a password; 401 invalid_mfa_code when wrong). Removes the authenticator and the recovery codes. For a role that requires a second factor, the next login asks to enrol again.',
        security: [{ bearerAuth: [] }],
        body: Type.Object({ code: Code }, { additionalProperties: false, examples: [{ code: '492039' }, { code: '7KQ4-MZ2X-PA9D' }] }),
        response: { 204: Type.Null({ description: 'Second factor off' }), ...problemResponses(401, 403, 409, 429, 503) },
      },
    },
    async (request, reply) => {
      await disableTotp(deps, guards.limiter, userPrincipalOf(request).userId, request.body.code, originOf(request));
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/v2/auth/mfa/recovery-codes',
    {
      onRequest: requireUser,
      bodyLimit: credentialsBodyLimit(deps.config),
      schema: {
        operationId: 'newRecoveryCodes',
        tags: ['auth'],
        summary: 'Ten new recovery codes, shown once',
        description: 'Replaces every earlier recovery code (used or not). Each code works once, in place of an authenticator code, at mfa/verify or to turn the second factor off. Needs an active authenticator (409) and the password (counted by the login limits; 401 invalid_credentials when wrong). Only hashes are kept: this answer is the one chance to see the codes.',
        security: [{ bearerAuth: [] }],
        body: Type.Object({ password: GivenPassword }, { additionalProperties: false, examples: [{ password: 'correct horse battery staple' }] }),
        response: {
          201: Type.Object({ recovery_codes: Type.Array(Type.String(), { minItems: 10, maxItems: 10 }) }, {
            additionalProperties: false,
            examples: [{ recovery_codes: ['7KQ4-MZ2X-PA9D', 'C3RT-9VWN-H2QE', 'X8PH-4DFA-M6TZ', 'QN5J-W7KC-2RBY', 'F9HE-3XUM-VK4P', 'T2WD-6QRN-8JCA', 'M4ZB-Y8RE-PW3F', 'HK7V-C2TQ-5NXG', 'R6PA-J9MD-E4WU', 'W3NF-K5YH-Z7QB'] }],
          }),
          ...problemResponses(401, 403, 409, 429, 503),
        },
      },
    },
    async (request, reply) => {
      const codes = await newRecoveryCodes(deps, guards.limiter, userPrincipalOf(request).userId, request.body.password, originOf(request));
      return reply.code(201).header('cache-control', 'no-store').send({ recovery_codes: codes });
    },
  );

  app.post(
    '/api/v2/auth/mfa/verify',
    {
      bodyLimit: credentialsBodyLimit(deps.config),
      schema: {
        operationId: 'verifySecondFactor',
        tags: ['auth'],
        summary: 'Finish a login with a second-factor code',
        description: 'Takes the mfa_token of a 401 mfa_required login answer and a code (authenticator or recovery code); answers the login result. The token works once (and dies after 5 wrong codes); a code works once. Wrong codes count towards the login limits of the user and the address: 429 with Retry-After as for logins. With a DPoP header the session is bound to the proof\'s key, as at login.',
        headers: DpopHeaders,
        body: Type.Object({ mfa_token: MfaToken, code: Code }, { additionalProperties: false, examples: [{ mfa_token: EXAMPLE_MFA_TOKEN, code: '492039' }, { mfa_token: EXAMPLE_MFA_TOKEN, code: '7KQ4-MZ2X-PA9D' }] }),
        response: { 200: TokenPairSchema, ...problemResponses(400, 401, 403, 429, 503), ...proofRefusal() },
      },
    },
    async (request, reply) => {
      const dpop = await tokenRequestProof(request, deps.clock.now(), deps.config.DPOP_PROOF_WINDOW_SECONDS);
      const result = await verifyLoginCode(deps, guards, { mfaToken: request.body.mfa_token, code: request.body.code, origin: originOf(request), ...(dpop ? { dpop } : {}) });
      return reply.header('cache-control', 'no-store').send(result);
    },
  );
};
