import type { Queryable } from '../db/database.js';

export type Role = 'seller' | 'marketplace' | 'admin';

export interface User {
  id: number;
  username: string;
  password_hash: string;
  seller_id: number;
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
  sellerId: number;
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

export async function findUserByUsername(db: Queryable, username: string): Promise<User | undefined> {
  const { rows } = await db.query<User>(`SELECT * FROM users WHERE lower(username) = lower($1)`, [username]);
  return rows[0];
}

export async function findUserById(db: Queryable, id: number): Promise<User | undefined> {
  const { rows } = await db.query<User>(`SELECT * FROM users WHERE id = $1`, [id]);
  return rows[0];
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
