import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { insertConnection, insertMarketplace, insertSeller, insertUser } from '../../src/accounts/accounts.repository.js';
import { hashPassword } from '../../src/auth/passwords.js';
import { loadConfig } from '../../src/config.js';
import type { Database } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { openDatabase } from '../../src/db/open.js';
import { loadKeys } from '../../src/keys.js';
import { encryptSecret, newWebhookSecret } from '../../src/keys/secret-box.js';
import { serveRequests } from '../lib/ipc.js';
import { median } from '../lib/stats.js';

/**
 * Work on the database outside the service: migrations, seeding, and the SQL ceilings of
 * scenarios 3 and 6. It goes through the project's own database layer and repositories, exactly
 * what `plaza users add …` runs (on the embedded way: the running server, or one started for the
 * task), in one process instead of one CLI start per row.
 */
interface WithEnv {
  env: Record<string, string>;
}

async function withDatabase<T>(env: Record<string, string>, work: (db: Database) => Promise<T>): Promise<T> {
  const config = loadConfig({ ...env, LOG_LEVEL: 'warn' });
  const db = await openDatabase(config);
  try {
    await migrate(db);
    return await work(db);
  } finally {
    await db.close();
  }
}

export interface SeedPlan extends WithEnv {
  marketplace: string;
  sellerId: number;
  /** Seller users `<prefix><i>` with password `<prefix><i>-password`. */
  users?: { prefix: string; count: number };
  /** More sellers connected to the marketplace, each with one seller user `seller-<id>` (scenario 11). */
  otherSellers?: number[];
  /** A marketplace user `<name>` of the marketplace, on seller `sellerId`'s account (scenario 11 creates a marketplace's webhook through the API). */
  marketplaceUser?: string;
  /** Webhooks inserted by SQL (scenario 6 needs more than the per-tenant limit allows through the API). */
  webhooks?: { count: number; topic: string; urls: string[]; /** Owner (default: the seller). */ tenant?: { kind: 'seller' | 'marketplace'; id: string } };
}

export interface Credentials {
  username: string;
  password: string;
}

export interface Seeded {
  connectionId: number;
  users: Credentials[];
  /** The user of each of `otherSellers`, in the same order. */
  otherSellerUsers: Credentials[];
  marketplaceUser?: Credentials;
}

/**
 * Active users of one seller with password `<username>-password`: seller users, or with
 * `marketplaceCode` marketplace users (who belong to a seller account too).
 */
async function insertUsers(db: Database, usernames: string[], sellerId: number, marketplaceCode: string | null = null): Promise<Credentials[]> {
  const role = marketplaceCode === null ? 'seller' : 'marketplace';
  const users: Credentials[] = [];
  for (let i = 0; i < usernames.length; i += 4) {
    // argon2 runs on the libuv pool: a few at a time fills it.
    const batch = usernames.slice(i, i + 4).map((username) => ({ username, password: `${username}-password` }));
    const hashes = await Promise.all(batch.map((user) => hashPassword(user.password)));
    for (const [k, user] of batch.entries()) {
      await insertUser(db, { username: user.username, passwordHash: hashes[k]!, sellerId, role, marketplaceCode, active: true });
      users.push(user);
    }
  }
  return users;
}

async function seed(plan: SeedPlan): Promise<Seeded> {
  return withDatabase(plan.env, async (db) => {
    await insertMarketplace(db, plan.marketplace, `Bench ${plan.marketplace}`);
    await insertSeller(db, plan.sellerId, `Bench seller ${plan.sellerId}`);
    const connectionId = await insertConnection(db, plan.sellerId, plan.marketplace);
    const usernames = Array.from({ length: plan.users?.count ?? 0 }, (_, i) => `${plan.users!.prefix}${i}`);
    const users = await insertUsers(db, usernames, plan.sellerId);
    const otherSellerUsers: Credentials[] = [];
    for (const sellerId of plan.otherSellers ?? []) {
      await insertSeller(db, sellerId, `Bench seller ${sellerId}`);
      await insertConnection(db, sellerId, plan.marketplace);
      otherSellerUsers.push(...(await insertUsers(db, [`seller-${sellerId}`], sellerId)));
    }
    const marketplaceUser = plan.marketplaceUser ? (await insertUsers(db, [plan.marketplaceUser], plan.sellerId, plan.marketplace))[0] : undefined;
    if (plan.webhooks) {
      const keys = await loadKeys(loadConfig(plan.env));
      const secret = encryptSecret(keys.webhookSecretsKey, newWebhookSecret());
      await db.query(
        `INSERT INTO webhooks (tenant_kind, tenant_id, marketplace_code, code, name, topic, callback_url, seller_id, secret_encrypted)
         SELECT $7, $1::text, $2, 'fan-' || i, 'Fan-out ' || i, $3, ($4::text[])[1 + i % cardinality($4::text[])] || '/fan/' || i, '*', $5
           FROM generate_series(1, $6::int) AS i`,
        [plan.webhooks.tenant?.id ?? String(plan.sellerId), plan.marketplace, plan.webhooks.topic, plan.webhooks.urls, secret, plan.webhooks.count, plan.webhooks.tenant?.kind ?? 'seller'],
      );
    }
    return { connectionId, users, otherSellerUsers, marketplaceUser };
  });
}

const sha256 = (token: Buffer) => createHash('sha256').update(token).digest();

/**
 * Ceiling of scenario 3: what the database alone does for a rotation, the two statements of the
 * refresh transaction (revoke the presented token, insert its successor), with the same number of
 * concurrent clients as the load driver and the service's pool size.
 */
async function refreshCeiling(job: WithEnv & { chains: number; concurrency: number; warmupMs: number; durationMs: number }): Promise<{ perSecond: number; operations: number; rotations: number; cpuMs: number }> {
  return withDatabase(job.env, async (db) => {
    const { rows: users } = await db.query<{ id: number }>(`SELECT id FROM users ORDER BY id`);
    if (users.length === 0) throw new Error('no users to rotate tokens for');
    const now = new Date();
    const heads: Buffer[] = [];
    for (let i = 0; i < job.chains; i++) {
      const userId = users[i % users.length]!.id;
      const sessionId = randomUUID();
      const token = randomBytes(32);
      await db.query(`INSERT INTO sessions (id, user_id, created_at, last_used_at) VALUES ($1, $2, $3, $3)`, [sessionId, userId, now]);
      await db.query(
        `INSERT INTO refresh_tokens (token_hash, session_id, user_id, issued_at, expires_at) VALUES ($1, $2, $3, $4, $4::timestamptz + interval '7 days')`,
        [sha256(token), sessionId, userId, now],
      );
      heads.push(token);
    }
    const rotate = async (chain: number) => {
      const presented = sha256(heads[chain]!);
      const successor = randomBytes(32);
      const at = new Date();
      await db.transaction(async (tx) => {
        const { rows } = await tx.query<{ id: number; session_id: string; user_id: number }>(
          `UPDATE refresh_tokens SET revoked_at = $2, revoked_reason = 'rotated'
            WHERE token_hash = $1 AND revoked_at IS NULL RETURNING id, session_id, user_id`,
          [presented, at],
        );
        const row = rows[0];
        if (!row) throw new Error('chain broken');
        await tx.query(
          `INSERT INTO refresh_tokens (token_hash, session_id, user_id, parent_id, issued_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, $5::timestamptz + interval '7 days')`,
          [sha256(successor), row.session_id, row.user_id, row.id, at],
        );
      });
      heads[chain] = successor;
    };
    // Deadlines checked in the loops rather than timers; each loop yields to the event loop once
    // per rotation.
    const measureFrom = performance.now() + job.warmupMs;
    const measureTo = measureFrom + job.durationMs;
    let operations = 0;
    // Every rotation, warm-up included, and this process's CPU over them: the client's part of a rotation's CPU.
    let rotations = 0;
    const cpuFrom = process.cpuUsage();
    await Promise.all(
      Array.from({ length: job.concurrency }, async (_, loop) => {
        // Each loop owns the chains loop, loop + concurrency, …: no two rotate one chain at once.
        const owned = Math.ceil((job.chains - loop) / job.concurrency);
        for (let k = 0; owned > 0; k++) {
          const started = performance.now();
          if (started >= measureTo) return;
          await rotate(loop + (k % owned) * job.concurrency);
          rotations++;
          if (started >= measureFrom) operations++;
          await new Promise((resolve) => setImmediate(resolve));
        }
      }),
    );
    const cpu = process.cpuUsage(cpuFrom);
    const elapsed = job.durationMs;
    return { perSecond: (operations / elapsed) * 1000, operations, rotations, cpuMs: (cpu.user + cpu.system) / 1000 };
  });
}

/**
 * Ceiling of scenario 6: one event's deliveries to every webhook of the marketplace, inserted by
 * one INSERT … SELECT and committed; the rows are deleted again after each repetition.
 */
async function bulkInsertCeiling(job: WithEnv & { marketplace: string; sellerId: number; repetitions: number }): Promise<{ medianMs: number; rows: number }> {
  return withDatabase(job.env, async (db) => {
    const times: number[] = [];
    let rows = 0;
    for (let i = 0; i < job.repetitions; i++) {
      const now = new Date();
      const { rows: created } = await db.query<{ id: number }>(
        `INSERT INTO events (event_id, marketplace_code, topic, seller_id, entity_id, body, delivery_count, request_hash, created_at)
         VALUES ($1, $2, 'order/create', $3, $1, '{}'::jsonb, 0, 'ceiling', $4) RETURNING id`,
        [`ceiling-${i}-${randomUUID()}`, job.marketplace, job.sellerId, now],
      );
      const eventRowId = created[0]!.id;
      const started = performance.now();
      rows = await db.transaction(async (tx) => {
        const result = await tx.query(
          `INSERT INTO deliveries (event_id, webhook_id, entity_key, message_id, status, attempts, next_attempt_at, created_at, updated_at, sequence)
           SELECT $1, w.id, 'ceiling', 'msg_' || replace(gen_random_uuid()::text, '-', ''), 'pending', 0, $3, $3, $3, 1
             FROM webhooks w WHERE w.marketplace_code = $2`,
          [eventRowId, job.marketplace, now],
        );
        return result.rowCount;
      });
      times.push(performance.now() - started);
      await db.query(`DELETE FROM events WHERE id = $1`, [eventRowId]);
    }
    return { medianMs: median(times), rows };
  });
}

/** Scenario 6's second row: the same filter on every webhook of the marketplace (SQL, as the webhooks were made). */
async function setFilters(job: WithEnv & { marketplace: string; filter: Record<string, unknown> }): Promise<{ rows: number }> {
  return withDatabase(job.env, async (db) => {
    const result = await db.query(`UPDATE webhooks SET filter = $2::jsonb WHERE marketplace_code = $1`, [job.marketplace, JSON.stringify(job.filter)]);
    return { rows: result.rowCount ?? 0 };
  });
}

serveRequests({
  prepare: async (job: WithEnv) => {
    await withDatabase(job.env, async () => undefined);
    // Generates DATA_DIR/keys.json now, so that seeding can encrypt secrets the service will read.
    await loadKeys(loadConfig(job.env));
  },
  seed,
  'refresh-ceiling': refreshCeiling,
  'bulk-insert-ceiling': bulkInsertCeiling,
  'set-filters': setFilters,
});
