import type { Principal } from './principal.js';
import type { Queryable } from '../db/database.js';

/** Who acts: a user, an API key, or the command line (whoever runs it already holds the database). */
export type Actor = string;
export const CLI_ACTOR: Actor = 'cli';

export function actorOf(principal: Principal): Actor {
  return principal.apiKeyId !== undefined ? `api_key:${principal.apiKeyId}` : `user:${principal.userId}`;
}

export interface AdminAction {
  actor: Actor;
  action: 'create' | 'update' | 'deactivate' | 'activate' | 'delete' | 'revoke' | 'reset_password';
  targetKind: 'marketplace' | 'seller' | 'connection' | 'user' | 'api_key';
  targetId: string | number;
  at: Date;
  /** Changed field names and similar facts: never a password or a key. */
  detail?: Record<string, unknown>;
}

/** Written in the same transaction as the change it records. */
export async function recordAdminAction(db: Queryable, action: AdminAction): Promise<void> {
  await db.query(
    `INSERT INTO admin_audit (at, actor, action, target_kind, target_id, detail) VALUES ($1, $2, $3, $4, $5, $6)`,
    [action.at, action.actor, action.action, action.targetKind, String(action.targetId), action.detail ? JSON.stringify(action.detail) : null],
  );
}
