import { Type } from 'typebox';
import { MAX_INT32 } from '../http/path-params.js';

/** Schemas shared by the admin routes. */
export const Id = Type.Integer({ minimum: 1, maximum: MAX_INT32 });
export const IdParams = Type.Object({ id: Id });
export const RoleSchema = Type.Union([Type.Literal('seller'), Type.Literal('marketplace'), Type.Literal('admin')]);
export const Timestamp = Type.String({ format: 'date-time' });
export const ADMIN_TAGS = ['admin'];
