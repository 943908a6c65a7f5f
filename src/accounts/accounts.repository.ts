import type { Queryable } from '../db/database.js';
import { canonicalUserName } from './user-name.js';

import type { Role } from '../settings/roles.js';

export type { Role };

export interface User {
  id: number;
  username: string;
  password_hash: string;
  /** null only for an admin bound to no seller. */
  seller_id: number | null;
  role: Role;
  marketplace_code: string | null;
  active: boolean;
}

export async function insertMarketplace(db: Queryable, code: string, name: string): Promise<void> {
  await db.query(`INSERT INTO marketplaces (code, name) VALUES ($1, $2)`, [code, name]);
}

export async function insertSeller(db: Queryable, id: number, name: string): Promise<void> {
  await db.query(`INSERT INTO sellers (id, name) VALUES ($1, $2)`, [id, name]);
}

export async function insertConnection(db: Queryable, sellerId: number, marketplaceCode: string): Promise<number> {
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO marketplace_connections (seller_id, marketplace_code) VALUES ($1, $2) RETURNING id`,
    [sellerId, marketplaceCode],
  );
  return rows[0]!.id;
}

export interface NewUser {
  username: string;
  passwordHash: string;
  sellerId: number | null;
  role: Role;
  marketplaceCode: string | null;
  active: boolean;
}

export async function insertUser(db: Queryable, user: NewUser): Promise<number> {
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO users (username, password_hash, seller_id, role, marketplace_code, active)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
    [user.username, user.passwordHash, user.sellerId, user.role, user.marketplaceCode, user.active],
  );
  return rows[0]!.id;
}

/**
 * The user a typed name names, as login finds it (login-account.ts): by the name's canonical form,
 * else, for a name stored before names were canonical, by the name exactly as typed.
 */
export async function findUserByUsername(db: Queryable, username: string): Promise<User | undefined> {
  const { rows } = await db.query<User>(
    `SELECT * FROM users WHERE lower(username) IN (lower($1), lower($2)) ORDER BY lower(username) = lower($1) DESC LIMIT 1`,
    [canonicalUserName(username), username],
  );
  return rows[0];
}

export async function findUserById(db: Queryable, id: number): Promise<User | undefined> {
  const { rows } = await db.query<User>(`SELECT * FROM users WHERE id = $1`, [id]);
  return rows[0];
}

/**
 * Stores a new password's hash (an administrator's reset, a user's own change); false when there is
 * no such user. The callers end the user's sessions in the same transaction.
 */
export async function setPasswordHash(db: Queryable, userId: number, passwordHash: string, now: Date): Promise<boolean> {
  const { rowCount } = await db.query(`UPDATE users SET password_hash = $2, updated_at = $3 WHERE id = $1`, [userId, passwordHash, now]);
  return rowCount > 0;
}

/** Returns false when no user has that name. */
export async function setUserActive(db: Queryable, username: string, active: boolean): Promise<boolean> {
  const { rowCount } = await db.query(`UPDATE users SET active = $2, updated_at = now() WHERE lower(username) = lower($1)`, [username, active]);
  return rowCount > 0;
}

export async function countUsers(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ count: number }>(`SELECT count(*)::int AS count FROM users`);
  return rows[0]!.count;
}

// Administration (src/admin/, src/cli/): lists are keyset pages in key order.

export interface MarketplaceRow {
  code: string;
  name: string;
  active: boolean;
  created_at: Date;
}

export interface SellerRow {
  id: number;
  name: string;
  active: boolean;
  created_at: Date;
}

export interface ConnectionRow {
  id: number;
  seller_id: number;
  marketplace_code: string;
  created_at: Date;
}

export type UserSummary = Omit<User, 'password_hash'> & { created_at: Date; updated_at: Date };

const USER_COLUMNS = `id, username, seller_id, role, marketplace_code, active, created_at, updated_at`;

export async function listMarketplaces(db: Queryable, after: string, limit: number): Promise<MarketplaceRow[]> {
  // COLLATE "C": the cursor compares the way the ORDER BY sorts, on every server locale.
  const { rows } = await db.query<MarketplaceRow>(`SELECT code, name, active, created_at FROM marketplaces WHERE code COLLATE "C" > $1 ORDER BY code COLLATE "C" LIMIT $2`, [after, limit]);
  return rows;
}

export async function findMarketplace(db: Queryable, code: string): Promise<MarketplaceRow | undefined> {
  const { rows } = await db.query<MarketplaceRow>(`SELECT code, name, active, created_at FROM marketplaces WHERE code = $1`, [code]);
  return rows[0];
}

export interface TenantChanges {
  name?: string | undefined;
  active?: boolean | undefined;
}

/** One statement: fields left out keep their value. */
export async function changeMarketplace(db: Queryable, code: string, changes: TenantChanges): Promise<MarketplaceRow | undefined> {
  const { rows } = await db.query<MarketplaceRow>(
    `UPDATE marketplaces SET name = coalesce($2, name), active = coalesce($3, active) WHERE code = $1 RETURNING code, name, active, created_at`,
    [code, changes.name ?? null, changes.active ?? null],
  );
  return rows[0];
}

export async function listSellers(db: Queryable, afterId: number, limit: number): Promise<SellerRow[]> {
  const { rows } = await db.query<SellerRow>(`SELECT id, name, active, created_at FROM sellers WHERE id > $1 ORDER BY id LIMIT $2`, [afterId, limit]);
  return rows;
}

export async function findSeller(db: Queryable, id: number): Promise<SellerRow | undefined> {
  const { rows } = await db.query<SellerRow>(`SELECT id, name, active, created_at FROM sellers WHERE id = $1`, [id]);
  return rows[0];
}

export async function changeSeller(db: Queryable, id: number, changes: TenantChanges): Promise<SellerRow | undefined> {
  const { rows } = await db.query<SellerRow>(
    `UPDATE sellers SET name = coalesce($2, name), active = coalesce($3, active) WHERE id = $1 RETURNING id, name, active, created_at`,
    [id, changes.name ?? null, changes.active ?? null],
  );
  return rows[0];
}

export async function listConnections(db: Queryable, afterId: number, limit: number, filter: { sellerId?: number | undefined; marketplaceCode?: string | undefined } = {}): Promise<ConnectionRow[]> {
  const { rows } = await db.query<ConnectionRow>(
    `SELECT id, seller_id, marketplace_code, created_at FROM marketplace_connections
      WHERE id > $1 AND ($3::int IS NULL OR seller_id = $3) AND ($4::text IS NULL OR marketplace_code = $4)
      ORDER BY id LIMIT $2`,
    [afterId, limit, filter.sellerId ?? null, filter.marketplaceCode ?? null],
  );
  return rows;
}

export async function findConnection(db: Queryable, id: number): Promise<ConnectionRow | undefined> {
  const { rows } = await db.query<ConnectionRow>(`SELECT id, seller_id, marketplace_code, created_at FROM marketplace_connections WHERE id = $1`, [id]);
  return rows[0];
}

export async function listUsers(db: Queryable, afterId: number, limit: number): Promise<UserSummary[]> {
  const { rows } = await db.query<UserSummary>(`SELECT ${USER_COLUMNS} FROM users WHERE id > $1 ORDER BY id LIMIT $2`, [afterId, limit]);
  return rows;
}

export async function findUserSummary(db: Queryable, id: number): Promise<UserSummary | undefined> {
  const { rows } = await db.query<UserSummary>(`SELECT ${USER_COLUMNS} FROM users WHERE id = $1`, [id]);
  return rows[0];
}

/** Deletes by key; returns whether a row went. Rows still referenced raise 23503 (explained as a 409 by withConstraints). */
export async function deleteRow(db: Queryable, table: 'marketplaces' | 'sellers' | 'marketplace_connections' | 'users', key: string | number): Promise<boolean> {
  const column = table === 'marketplaces' ? 'code' : 'id';
  const { rowCount } = await db.query(`DELETE FROM ${table} WHERE ${column} = $1`, [key]);
  return rowCount > 0;
}
