/**
 * Long-poll probe (issue 30): how many database connections 1 000 consumers waiting on the feed
 * (`GET …/notifications?wait=20`) hold, and how soon an event answers them all. The waiting requests
 * run through the real app (Fastify's inject: the same routes, hooks and feed waiters as over HTTP)
 * on a database that counts the calls in progress (running, or queued for one of the pool's
 * connections), sampled every 20 ms while they wait; and the server's own count of this database's
 * connections (pg_stat_activity): the pool's, idle ones included, and the LISTEN connection.
 *
 *   npm run build && DATABASE_URL=postgres://… node dist/bench/probes/feed-long-poll.js [--waiters 1000] [--webhooks 10]
 */
import { buildApp, type App } from '../../src/app.js';
import { countedDatabase } from '../../src/testing/counted-database.js';
import { insertWebhook, order, postEvent, sampleEvent, seedWorld } from '../../src/testing/events.js';
import { createTestApp } from '../../src/testing/test-app.js';

function argument(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  return at === -1 ? fallback : Number(process.argv[at + 1]);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const waiters = argument('--waiters', 1000);
  const webhooks = argument('--webhooks', 10);
  // One tenant holds every waiter here: its bound is raised to the probe's size.
  const ctx = await createTestApp({ ACCESS_TOKEN_TTL_SECONDS: '86400', NOTIFICATION_FEED_MAX_WAITERS_PER_TENANT: String(waiters) });
  let app: App | undefined;
  try {
    const world = await seedWorld(ctx);
    for (let w = 0; w < webhooks; w++) await insertWebhook(ctx.db, { tenantKind: 'seller', tenantId: '1', code: `feed-${w}`, topic: 'order/create' });
    const { db, counts } = countedDatabase(ctx.db);
    app = await buildApp({ config: ctx.config, db, keys: ctx.keys, clock: ctx.clock, logger: false });
    const probeApp = app;
    const feed = (code: string, query: string) =>
      probeApp.inject({ method: 'GET', url: `/v1/MKT/webhooks/${code}/notifications${query}`, headers: world.headers.seller1 });
    const cursors = await Promise.all(Array.from({ length: webhooks }, async (_, w) => (await feed(`feed-${w}`, '')).json<{ next_cursor: string }>().next_cursor));

    const started = performance.now();
    const answered: number[] = [];
    const waiting = Array.from({ length: waiters }, (_, i) =>
      feed(`feed-${i % webhooks}`, `?after=${cursors[i % webhooks]!}&wait=20`).then((response) => {
        answered.push(performance.now());
        return response;
      }),
    );
    // Every request has read its empty page and waits; then sample for two seconds.
    await sleep(3000);
    const setUp = counts.most;
    counts.most = counts.inUse;
    let sampledMost = 0;
    let serverMost = 0;
    for (let i = 0; i < 100; i++) {
      sampledMost = Math.max(sampledMost, counts.inUse);
      if (i % 10 === 0) {
        const { rows } = await ctx.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database()`);
        serverMost = Math.max(serverMost, rows[0]!.n);
      }
      await sleep(20);
    }
    const waitingMost = counts.most;
    const early = answered.length;
    // One event for seller 1 matches every webhook: every waiter is answered.
    const sent = performance.now();
    const response = await postEvent(ctx, world.headers.admin, sampleEvent('order/create', world, { event_id: 'probe-1', entity_id: 'ORD-P', order: order('ORD-P', { id: 1 }) }));
    if (response.statusCode !== 202) throw new Error(`intake answered ${response.statusCode}: ${response.body}`);
    const results = await Promise.all(waiting);
    const done = performance.now();
    const withItem = results.filter((result) => result.statusCode === 200 && result.json<{ items: unknown[] }>().items.length === 1).length;
    const outcomes = new Map<string, number>();
    for (const result of results) {
      const key = result.statusCode === 200 ? `200 with ${result.json<{ items: unknown[] }>().items.length} items` : `${result.statusCode} ${result.json<{ code?: string }>().code ?? ''}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
    }
    console.log(`${waiters} waiters on ${webhooks} webhooks (DATABASE_POOL_SIZE ${ctx.config.DATABASE_POOL_SIZE}); answers: ${[...outcomes].map(([key, n]) => `${n} × ${key}`).join(', ')}`);
    console.log(`setting up (each reads its first page): at most ${setUp} database calls in progress or queued; ${early} answered before the event`);
    console.log(`from 3 s on (2 s, sampled every 20 ms): ${sampledMost} calls in progress or queued at a sample, ${waitingMost} at most between samples; the server counted at most ${serverMost} connections of this database (the pool, idle ones included, and LISTEN)`);
    console.log(`an event to every webhook: ${withItem} of ${waiters} answered with it, the last ${(done - sent).toFixed(0)} ms after the intake began; ${(done - started).toFixed(0)} ms in all`);
  } finally {
    await app?.close();
    await ctx.close();
  }
}

await main();
