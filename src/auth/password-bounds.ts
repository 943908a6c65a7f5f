import { Type } from 'typebox';

/**
 * How long a password may be, in characters counted as the schemas count them (code points). The
 * one statement of the bounds: the API's and the portal's schemas, the rule for a password being
 * set (password-strength.ts) and the CLI, which checks them before it opens the database, all come
 * from here.
 */
export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 1024;

/** A password being set (creation, reset, change). */
export const NewPassword = Type.String({
  minLength: PASSWORD_MIN_LENGTH,
  maxLength: PASSWORD_MAX_LENGTH,
  description: 'A new password: not one of the bundled list of common and breached passwords (nor a variant of one), and a zxcvbn strength score of at least PASSWORD_MIN_SCORE (3 by default); otherwise 400 validation_failed naming this field, with the reason. Judged offline.',
});

/** A password given to be checked (login, the current password): one set before the rule may be shorter. */
export const GivenPassword = Type.String({ minLength: 1, maxLength: PASSWORD_MAX_LENGTH });

/** What is wrong with the length of a password being set ("must have at least 8 characters"), if anything. */
export function passwordLengthProblem(password: string): string | undefined {
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH) return `must have at least ${PASSWORD_MIN_LENGTH} characters`;
  if (length > PASSWORD_MAX_LENGTH) return `may have at most ${PASSWORD_MAX_LENGTH} characters`;
  return undefined;
}
