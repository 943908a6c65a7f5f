import { Type } from 'typebox';
import { CONTROL_CHARACTERS } from '../webhooks/webhook-validators.js';

const MAX_LENGTH = 200;
const PATTERN = `^[^${CONTROL_CHARACTERS}]+$`;

/**
 * A user name as login takes it and administration creates it: 1–200 characters (the users
 * table's CHECK), none of them a control character (never part of a name, and PostgreSQL text
 * cannot hold NUL).
 */
export const UserName = Type.String({ minLength: 1, maxLength: MAX_LENGTH, pattern: PATTERN });

const USER_NAME = new RegExp(PATTERN);

/** The same rule, for names that do not come through HTTP validation (the CLI). Lengths in characters, as the CHECK counts them. */
export function isUserName(text: string): boolean {
  return [...text].length <= MAX_LENGTH && USER_NAME.test(text);
}
