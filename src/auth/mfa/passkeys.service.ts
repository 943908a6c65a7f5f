import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type AuthenticatorTransport,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { findUserById, type User } from '../../accounts/accounts.repository.js';
import type { FeatureDeps } from '../../deps.js';
import { AppError } from '../../http/errors.js';
import { recordAuthEvent, type RequestOrigin } from '../auth-events.repository.js';
import { findPasskey, insertPasskey, passkeysOf, saveWebauthnChallenge, takeWebauthnChallenge, usePasskey } from './passkeys.repository.js';

/*
 * Passkeys (WebAuthn) with @simplewebauthn/server, the maintained library for both ceremonies.
 * User verification is required (a PIN or biometric on the authenticator): a passkey is then
 * something the user has and something they know or are, so it signs in on its own, and it also
 * stands in for the code after a password. Attestation is not asked for ('none'): Plaza does not
 * restrict which authenticators people use.
 */

/** The relying party: the origin the browser is on (checked same-origin by the portal) and its host name. */
export interface RelyingParty {
  origin: string;
  rpID: string;
  name: string;
}

const CEREMONY_SECONDS = 300;
const failed = (detail: string) => new AppError('invalid_mfa_code', detail);

export async function registrationOptions(deps: Pick<FeatureDeps, 'db' | 'clock'>, user: User, rp: RelyingParty): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const existing = await passkeysOf(deps.db, user.id);
  const options = await generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.rpID,
    userName: user.username,
    // A stable, opaque handle: the user id as text, never the name (it may change).
    userID: new TextEncoder().encode(`plaza-user-${user.id}`),
    attestationType: 'none',
    excludeCredentials: existing.map((key) => ({ id: key.id, transports: key.transports as AuthenticatorTransport[] })),
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
  });
  await saveWebauthnChallenge(deps.db, { challenge: options.challenge, userId: user.id, purpose: 'register', now: deps.clock.now(), ttlSeconds: CEREMONY_SECONDS });
  return options;
}

/** The challenge a WebAuthn answer signed, read from its clientDataJSON (verified below, by the library). */
function challengeOf(clientDataJSON: string): string {
  try {
    const challenge = (JSON.parse(Buffer.from(clientDataJSON, 'base64url').toString('utf8')) as { challenge?: unknown }).challenge;
    if (typeof challenge === 'string' && challenge.length <= 200) return challenge;
  } catch {
    // fall through
  }
  throw failed('The passkey answer is not valid.');
}

export async function registerPasskey(deps: Pick<FeatureDeps, 'db' | 'clock'>, user: User, response: RegistrationResponseJSON, rp: RelyingParty, name: string, origin: RequestOrigin): Promise<void> {
  const now = deps.clock.now();
  const challenge = challengeOf(response.response.clientDataJSON);
  const stored = await takeWebauthnChallenge(deps.db, challenge, 'register', now);
  if (!stored || stored.user_id !== user.id) throw failed('The passkey request expired or was used already; try again.');
  const result = await verifyRegistrationResponse({ response, expectedChallenge: challenge, expectedOrigin: rp.origin, expectedRPID: rp.rpID, requireUserVerification: true }).catch(() => ({ verified: false as const }));
  if (!result.verified) throw failed('The passkey could not be verified.');
  const { credential } = result.registrationInfo;
  await insertPasskey(deps.db, { id: credential.id, userId: user.id, publicKey: credential.publicKey, counter: credential.counter, transports: credential.transports ?? [], name, now });
  await recordAuthEvent(deps.db, { type: 'mfa_enrolled', at: now, origin, userId: user.id, username: user.username, detail: { method: 'passkey' } });
}

/**
 * Options of a sign-in: for anyone (a discoverable passkey names its user), or, after a password,
 * for the mfa_token's user only (their passkeys listed).
 */
export async function authenticationOptions(deps: Pick<FeatureDeps, 'db' | 'clock'>, rp: RelyingParty, forUserId: number | null): Promise<PublicKeyCredentialRequestOptionsJSON> {
  const keys = forUserId === null ? [] : await passkeysOf(deps.db, forUserId);
  const options = await generateAuthenticationOptions({
    rpID: rp.rpID,
    userVerification: 'required',
    ...(forUserId === null ? {} : { allowCredentials: keys.map((key) => ({ id: key.id, transports: key.transports as AuthenticatorTransport[] })) }),
  });
  await saveWebauthnChallenge(deps.db, { challenge: options.challenge, userId: forUserId, purpose: 'sign_in', now: deps.clock.now(), ttlSeconds: CEREMONY_SECONDS });
  return options;
}

/** A verified sign-in answer: the passkey's user (for a challenge bound to a user, only that user). */
export async function authenticatePasskey(deps: Pick<FeatureDeps, 'db' | 'clock'>, response: AuthenticationResponseJSON, rp: RelyingParty, origin: RequestOrigin): Promise<User> {
  const now = deps.clock.now();
  const challenge = challengeOf(response.response.clientDataJSON);
  const stored = await takeWebauthnChallenge(deps.db, challenge, 'sign_in', now);
  const key = typeof response.id === 'string' ? await findPasskey(deps.db, response.id) : undefined;
  if (!stored || !key || (stored.user_id !== null && stored.user_id !== key.user_id)) throw failed('The passkey is not known here, or the request expired; try again.');
  const result = await verifyAuthenticationResponse({
    response,
    expectedChallenge: challenge,
    expectedOrigin: rp.origin,
    expectedRPID: rp.rpID,
    credential: { id: key.id, publicKey: new Uint8Array(key.public_key), counter: Number(key.counter), transports: key.transports as AuthenticatorTransport[] },
    requireUserVerification: true,
  }).catch(() => ({ verified: false as const, authenticationInfo: undefined }));
  const user = await findUserById(deps.db, key.user_id);
  if (!result.verified || !result.authenticationInfo || !user || !(await usePasskey(deps.db, key.id, result.authenticationInfo.newCounter, now))) {
    await recordAuthEvent(deps.db, { type: 'mfa_failed', at: now, origin, userId: user?.id ?? null, username: user?.username ?? null, detail: { reason: 'passkey_not_verified' } });
    throw failed('The passkey could not be verified.');
  }
  await recordAuthEvent(deps.db, { type: 'mfa_used', at: now, origin, userId: user.id, username: user.username, detail: { method: 'passkey' } });
  return user;
}
