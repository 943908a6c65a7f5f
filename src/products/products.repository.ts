import type { Queryable } from '../db/database.js';

export interface ProductRow {
  id: number;
  sku: string;
  name: string;
  price: number | null;
  stock: number;
  created_at: Date;
}

/** One page of a seller's products in id order, after the id `afterId` (keyset pagination). */
export async function listProductsOfSeller(db: Queryable, sellerId: number, afterId: number, limit: number): Promise<ProductRow[]> {
  const { rows } = await db.query<ProductRow>(
    `SELECT id, sku, name, price::float8 AS price, stock, created_at
       FROM products
      WHERE seller_id = $1 AND id > $2
      ORDER BY id
      LIMIT $3`,
    [sellerId, afterId, limit],
  );
  return rows;
}

export async function insertProduct(db: Queryable, product: { sellerId: number; sku: string; name: string; price?: number | null; stock?: number }): Promise<number> {
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO products (seller_id, sku, name, price, stock) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
    [product.sellerId, product.sku, product.name, product.price ?? null, product.stock ?? 0],
  );
  return rows[0]!.id;
}
