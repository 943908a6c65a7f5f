import type { Seeded } from '../children/db-tasks.js';
import { dbTask, type BenchDatabase } from '../lib/database.js';

export const MARKETPLACE = 'bench';
export const SELLER_ID = 1;

/** The tenant every scenario uses: marketplace `bench`, seller 1 connected to it, `users` seller users. */
export function seedTenant(db: BenchDatabase, users: number, extra: Record<string, unknown> = {}): Promise<Seeded> {
  return dbTask<Seeded>(db, 'seed', { marketplace: MARKETPLACE, sellerId: SELLER_ID, users: { prefix: 'user', count: users }, ...extra });
}
