import { insertConnection, insertMarketplace, insertSeller, insertUser, type Role } from '../accounts/accounts.repository.js';
import { issueAccessToken } from '../auth/access-tokens.js';
import { hashPassword } from '../auth/passwords.js';
import type { Queryable } from '../db/database.js';
import type { TestContext } from './test-app.js';

export interface SeededUser {
  id: number;
  username: string;
  password: string;
  sellerId: number;
  role: Role;
  marketplaceCode: string | null;
}

/** Inserts the marketplace and seller if missing, and a connection between them. Returns the connection id. */
export async function seedConnection(db: Queryable, sellerId: number, marketplaceCode: string): Promise<number> {
  await seedMarketplace(db, marketplaceCode);
  await seedSeller(db, sellerId);
  return insertConnection(db, sellerId, marketplaceCode);
}

export async function seedMarketplace(db: Queryable, code: string): Promise<void> {
  const exists = await db.query(`SELECT 1 FROM marketplaces WHERE code = $1`, [code]);
  if (exists.rowCount === 0) await insertMarketplace(db, code, `Marketplace ${code}`);
}

export async function seedSeller(db: Queryable, id: number): Promise<void> {
  const exists = await db.query(`SELECT 1 FROM sellers WHERE id = $1`, [id]);
  if (exists.rowCount === 0) await insertSeller(db, id, `Seller ${id}`);
}

let counter = 0;

/**
 * The password of test users and of tests that set one through the API or the CLI: strong enough
 * for the rule every setter applies (password-strength.ts, PASSWORD_MIN_SCORE). The second one is
 * for changes and resets, which must set something else.
 */
export const STRONG_PASSWORD = 'quiet harbour violet kettle 71';
export const OTHER_STRONG_PASSWORD = 'maple lantern orbit seventeen';

/** A user with a known password; the seller (and marketplace) are created when missing. */
export async function seedUser(
  db: Queryable,
  options: { username?: string; password?: string; sellerId?: number; role?: Role; marketplaceCode?: string; active?: boolean } = {},
): Promise<SeededUser> {
  const sellerId = options.sellerId ?? 1;
  const role = options.role ?? 'seller';
  const marketplaceCode = options.marketplaceCode ?? null;
  const username = options.username ?? `user${process.pid}_${++counter}`;
  const password = options.password ?? STRONG_PASSWORD;
  await seedSeller(db, sellerId);
  if (marketplaceCode) await seedMarketplace(db, marketplaceCode);
  const id = await insertUser(db, { username, passwordHash: await hashPassword(password), sellerId, role, marketplaceCode, active: options.active ?? true });
  return { id, username, password, sellerId, role, marketplaceCode };
}

/** An access token for a seeded user, signed by the test app's keys (no login round trip). */
export function accessTokenFor(ctx: TestContext, user: SeededUser, sessionId = '00000000-0000-4000-8000-000000000000'): Promise<string> {
  return issueAccessToken(ctx.keys, ctx.config, { userId: user.id, sessionId, sellerId: user.sellerId, role: user.role, marketplaceCode: user.marketplaceCode }, ctx.clock.now());
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
