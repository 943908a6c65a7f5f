import { Type } from 'typebox';

/**
 * A user name as login takes it and administration creates it: 1–200 characters (the users
 * table's CHECK), none of them a control character (never part of a name, and PostgreSQL text
 * cannot hold NUL).
 */
export const UserName = Type.String({ minLength: 1, maxLength: 200, pattern: '^[^\\u0000-\\u001f\\u007f]+$' });
