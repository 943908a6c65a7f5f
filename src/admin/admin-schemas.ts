import { Type } from 'typebox';
import { MAX_INT32 } from '../http/path-params.js';
import { CONTROL_CHARACTERS } from '../control-characters.js';
import { NAME_MAX_LENGTH, VISIBLE_CHARACTER } from '../webhooks/webhook-validators.js';

/** Schemas shared by the admin routes. */
export const Id = Type.Integer({ minimum: 1, maximum: MAX_INT32 });
export const IdParams = Type.Object({ id: Id });
export const RoleSchema = Type.Union([Type.Literal('seller'), Type.Literal('marketplace'), Type.Literal('admin')]);
export const Timestamp = Type.String({ format: 'date-time' });

/**
 * The name of a marketplace, a seller or an API key: at least one visible character and no control
 * character (the rule of webhook names). A NUL cannot be stored in a PostgreSQL text column at all,
 * and the others would reach lists and logs. Trimmed by the routes.
 */
export const Name = Type.String({
  minLength: 1,
  maxLength: NAME_MAX_LENGTH,
  pattern: `^(?=[\\s\\S]*${VISIBLE_CHARACTER})[^${CONTROL_CHARACTERS}]*$`,
  description: 'At least one visible character; no control characters. Leading and trailing spaces are trimmed.',
});
export const ADMIN_TAGS = ['admin'];
