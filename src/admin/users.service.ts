import { recordAdminAction, type Actor } from '../accounts/admin-audit.repository.js';
import { checkNewPassword } from '../auth/password-strength.js';
import { hashPassword } from '../auth/passwords.js';
import { revokeAllOfUser } from '../auth/sessions.repository.js';
import type { Database, Queryable } from '../db/database.js';
import { AppError, invalidField } from '../http/errors.js';
import { withConstraints } from '../http/db-conflicts.js';
import { findUserById, findUserSummary, insertUser, setPasswordHash, type Role, type UserSummary } from '../accounts/accounts.repository.js';
import { checkNewUserName } from '../accounts/user-name.js';

/** How a setter judges the password it is given (password-strength.ts): PASSWORD_MIN_SCORE, and the field to name in a 400. */
export interface PasswordPolicy {
  minScore: number;
  field: string;
}

export interface NewUserInput {
  username: string;
  password: string;
  sellerId: number | null;
  role: Role;
  marketplaceCode: string | null;
  active: boolean;
}

/** A name being given (creation, rename): its canonical form, or 400 when it breaks the rule (user-name.ts). */
function newUserName(text: string): string {
  const checked = checkNewUserName(text);
  if (!checked.ok) throw invalidField('body.username', checked.message);
  return checked.value;
}

/**
 * Creates a user (audited) under the canonical form of its name; a name taken in that form (in any
 * case), or a missing seller or marketplace, is a 409.
 */
export async function createUser(db: Database, input: NewUserInput, actor: Actor, now: Date, policy: PasswordPolicy): Promise<UserSummary> {
  const username = newUserName(input.username);
  await checkNewPassword(input.password, { field: policy.field, minScore: policy.minScore, userInputs: [username] });
  const passwordHash = await hashPassword(input.password);
  return withConstraints(`User ${username}`, () => db.transaction(async (tx) => {
    const id = await insertUser(tx, { username, passwordHash, sellerId: input.sellerId, role: input.role, marketplaceCode: input.marketplaceCode, active: input.active });
    await recordAdminAction(tx, { actor, action: 'create', targetKind: 'user', targetId: id, at: now, detail: { role: input.role } });
    return (await findUserSummary(tx, id))!;
  }));
}

export interface AdminGuard {
  /**
   * Refuse to switch off or delete the last active administrator (the admin API): nothing but the
   * CLI, which needs the database, could then administer the installation. The CLI itself may: it
   * is the way back (`plaza users add … --role admin`).
   */
  keepAnAdmin?: boolean;
}

/**
 * 409 when `userId` is the only active administrator. The active administrators are locked first,
 * so that two of them switching each other off at once cannot both succeed: the second waits, then
 * sees the first one gone.
 */
async function refuseLastAdmin(tx: Queryable, userId: number): Promise<void> {
  const { rows } = await tx.query<{ id: number }>(`SELECT id FROM users WHERE role = 'admin' AND active ORDER BY id FOR UPDATE`);
  if (rows.length === 1 && rows[0]!.id === userId) throw new AppError('conflict', 'This is the last active administrator; make or activate another one first.');
}

/**
 * Switches a user on or off. Switching off revokes every session and refresh token of the user in
 * the same transaction, so that switching the user on again does not revive them.
 * Returns undefined when there is no such user.
 */
export function setUserActiveById(db: Database, userId: number, active: boolean, actor: Actor, now: Date, options: AdminGuard = {}): Promise<UserSummary | undefined> {
  return updateUser(db, userId, { active }, actor, now, options);
}

export interface UserChanges {
  /** false deactivates: every session and refresh token of the user is revoked. */
  active?: boolean;
  /** A new name's rule, stored in canonical form (user-name.ts); unique whatever the case (409 otherwise). */
  username?: string;
}

/** Renames, deactivates or activates a user, each change audited. Undefined when there is no such user. */
export async function updateUser(db: Database, userId: number, changes: UserChanges, actor: Actor, now: Date, options: AdminGuard = {}): Promise<UserSummary | undefined> {
  const username = changes.username === undefined ? undefined : newUserName(changes.username);
  return withConstraints(`User ${username}`, () => db.transaction(async (tx) => {
    if (changes.active === false && options.keepAnAdmin) await refuseLastAdmin(tx, userId);
    const { rowCount } = await tx.query(
      `UPDATE users SET active = coalesce($2, active), username = coalesce($3, username), updated_at = $4 WHERE id = $1`,
      [userId, changes.active ?? null, username ?? null, now],
    );
    if (rowCount === 0) return undefined;
    if (changes.username !== undefined) {
      await recordAdminAction(tx, { actor, action: 'update', targetKind: 'user', targetId: userId, at: now, detail: { fields: ['username'] } });
    }
    if (changes.active !== undefined) {
      const revoked = changes.active ? 0 : await revokeAllOfUser(tx, userId, 'user_deactivated', now);
      await recordAdminAction(tx, { actor, action: changes.active ? 'activate' : 'deactivate', targetKind: 'user', targetId: userId, at: now, detail: { revoked_tokens: revoked } });
    }
    return findUserSummary(tx, userId);
  }));
}

/** An administrator sets a new password: every session of the user ends. False when there is no such user. */
export async function resetPassword(db: Database, userId: number, password: string, actor: Actor, now: Date, policy: PasswordPolicy): Promise<boolean> {
  const user = await findUserById(db, userId);
  if (!user) return false;
  await checkNewPassword(password, { field: policy.field, minScore: policy.minScore, userInputs: [user.username] });
  const passwordHash = await hashPassword(password);
  return db.transaction(async (tx) => {
    if (!(await setPasswordHash(tx, userId, passwordHash, now))) return false;
    const revoked = await revokeAllOfUser(tx, userId, 'password_changed', now);
    await recordAdminAction(tx, { actor, action: 'reset_password', targetKind: 'user', targetId: userId, at: now, detail: { revoked_tokens: revoked } });
    return true;
  });
}

/** Deletes a user with its sessions and refresh tokens (the audit trail keeps its name). */
export async function deleteUser(db: Database, userId: number, actor: Actor, now: Date, options: AdminGuard = {}): Promise<boolean> {
  return db.transaction(async (tx) => {
    if (options.keepAnAdmin) await refuseLastAdmin(tx, userId);
    const { rowCount } = await tx.query(`DELETE FROM users WHERE id = $1`, [userId]);
    if (rowCount === 0) return false;
    await recordAdminAction(tx, { actor, action: 'delete', targetKind: 'user', targetId: userId, at: now });
    return true;
  });
}
