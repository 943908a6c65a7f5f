import { TOTP_DIGITS } from './totp.js';

/*
 * The bounds of the second factor's fields, for the API's schemas and the portal's forms alike. The
 * portal's forms state only the upper ones: a code too short is answered on the form by the
 * service ("wrong code"), as a wrong one is, rather than with a page about an invalid request.
 */

/** A code: the 6 digits of the authenticator, or a recovery code (XXXX-XXXX-XXXX); spaces are ignored. */
export const MFA_CODE_MIN_LENGTH = TOTP_DIGITS;
export const MFA_CODE_MAX_LENGTH = 32;

/** The mfa_token of a login answer (`mfa_` and 43 characters), with room. */
export const MFA_TOKEN_MAX_LENGTH = 200;
