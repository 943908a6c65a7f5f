import Fastify from 'fastify';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { resolveDatabase } from '../../src/db/open.js';
import { serveRequests } from '../lib/ipc.js';

/**
 * The "minimal equivalent" ceiling of scenario 1 (issue 33): a Fastify process that verifies the
 * same access token with jose (against the service's published JWKS, with the same issuer,
 * audience and token type) and runs the same list query through a plain pg pool of the service's
 * size, and does nothing else: no tenant-state probe, no marketplace access check, no header
 * decryption, no response schema, no hooks, no logs. What the service adds on top of this is its
 * contract (src/webhooks/webhooks.routes.ts, bench/results/api-paths.md).
 */
interface Job {
  env: Record<string, string>;
  path: string;
  marketplace: string;
  jwks: JSONWebKeySet;
}

let pool: pg.Pool | undefined;
let release: (() => Promise<void>) | undefined;

serveRequests({
  start: async (job: Job) => {
    const config = loadConfig({ ...job.env, LOG_LEVEL: 'warn' });
    const target = await resolveDatabase(config);
    release = target.release;
    pool = new pg.Pool({ connectionString: target.url, max: config.DATABASE_POOL_SIZE });
    const db = pool;
    const keys = createLocalJWKSet(job.jwks);
    const options = { issuer: config.JWT_ISSUER, audience: config.JWT_AUDIENCE, typ: 'at+jwt' };
    const app = Fastify({ logger: false });
    app.get(job.path, async (request, reply) => {
      const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
      if (!token) return reply.code(401).send();
      const { payload } = await jwtVerify(token, keys, options).catch(() => ({ payload: undefined }));
      if (!payload) return reply.code(401).send();
      // The tenant the service's list is scoped to (tenantOf in src/webhooks/webhook-access.ts).
      const [kind, id] = payload.role === 'marketplace' ? ['marketplace', String(payload.mkt)] : ['seller', String(payload.seller_id)];
      const { rows } = await db.query(
        `SELECT * FROM webhooks WHERE marketplace_code = $1 AND tenant_kind = $2 AND tenant_id = $3 ORDER BY code, id LIMIT $4`,
        [job.marketplace, kind, id, 101],
      );
      return rows;
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    if (typeof address !== 'object' || !address) throw new Error('no address');
    return `http://127.0.0.1:${address.port}`;
  },
  stop: async () => {
    await pool?.end();
    await release?.();
  },
});
