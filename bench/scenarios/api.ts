import type { LoadResult } from '../children/load.js';
import { createWebhook, getText, login, loginAll } from '../lib/api.js';
import { progress, withCleanup } from '../lib/cleanup.js';
import { DatabaseCpu } from '../lib/cpu.js';
import { dbTask, type BenchDatabase } from '../lib/database.js';
import { Helper, runHelper } from '../lib/ipc.js';
import { met, ms, percent, perSecond, times, type Row, type Scenario } from '../lib/scenario.js';
import { Service } from '../lib/service.js';
import { MARKETPLACE, seedTenant } from './common.js';
import { cpuPer } from './delivery-rows.js';
import { recordServerMemory } from './memory.js';

const READ_CONNECTIONS = 50;
const LOGIN_CONNECTIONS = 8;
const REFRESH_CONNECTIONS = 20;
const SESSIONS = 100;

/** 1: GET /v1/{mkt}/webhooks (10 webhooks) with a valid access token, against the same JSON from a bare Fastify route. */
export const authenticatedRead: Scenario = {
  id: '1',
  name: 'authenticated read',
  run: (ctx) =>
    withCleanup(async (onExit) => {
      const { scale, engine } = ctx;
      const db = await ctx.newDatabase();
      const { users } = await seedTenant(db, 1);
      const service = await Service.start(db);
      onExit(() => service.stop());
      const { token } = await login(service.baseUrl, users[0]!.username, users[0]!.password);
      for (let i = 0; i < 10; i++) {
        await createWebhook(service.baseUrl, token, MARKETPLACE, {
          code: `hook-${i}`,
          topic: 'order/create',
          callback_url: `http://127.0.0.1:9/hooks/${i}`,
          headers: { 'x-shop': `north-${i}` },
        });
      }
      const path = `/v1/${MARKETPLACE}/webhooks`;
      const json = await getText(service.baseUrl, path, token);
      if ((JSON.parse(json) as unknown[]).length !== 10) throw new Error('the list does not hold the 10 webhooks');
      const load = { connections: READ_CONNECTIONS, warmupMs: scale.warmupMs, durationMs: scale.durationMs };
      progress(`${READ_CONNECTIONS} connections on ${path}`);
      const measured = await runHelper<LoadResult>('load', 'get', { ...load, url: `${service.baseUrl}${path}`, headers: { authorization: `Bearer ${token}` } });
      ctx.state.peakRss.push({ scenario: '1', process: 'serve', mib: (await service.peakRssMiB()) ?? Number.NaN });
      await recordServerMemory(ctx, '1', service);

      // The minimal equivalent (issue 33): jose on the same token against the service's JWKS, the
      // same list query through pg, nothing else. Measured while the service is up and idle: on
      // the embedded way the database server is the service's own.
      const jwks = JSON.parse(await getText(service.baseUrl, '/.well-known/jwks.json', token)) as unknown;
      const minimal = await Helper.start('minimal-read');
      onExit(() => minimal.stop());
      const minimalUrl = await minimal.request<string>('start', { env: db.env, path, marketplace: MARKETPLACE, jwks });
      progress('ceiling: minimal equivalent (jose + pg)');
      const equivalent = await runHelper<LoadResult>('load', 'get', { ...load, url: `${minimalUrl}${path}`, headers: { authorization: `Bearer ${token}` } });
      await minimal.request('stop');
      await minimal.stop();
      await service.stop();

      // The same read with ACCESS_TOKEN_REVOCATION=session (docs/authentication.md): its cost is
      // this run's figure against the one above, same database, same webhooks, a fresh login.
      const revoking = await Service.start(db, { env: { ACCESS_TOKEN_REVOCATION: 'session' } });
      onExit(() => revoking.stop());
      const session = await login(revoking.baseUrl, users[0]!.username, users[0]!.password);
      progress(`${READ_CONNECTIONS} connections on ${path}, ACCESS_TOKEN_REVOCATION=session`);
      const withRevocation = await runHelper<LoadResult>('load', 'get', { ...load, url: `${revoking.baseUrl}${path}`, headers: { authorization: `Bearer ${session.token}` } });
      await revoking.stop();

      const bare = await Helper.start('bare-route');
      onExit(() => bare.stop());
      const bareUrl = await bare.request<string>('start', { path, json });
      progress('ceiling: bare Fastify route');
      const ceiling = await runHelper<LoadResult>('load', 'get', { ...load, url: `${bareUrl}${path}`, headers: {} });
      await bare.stop();

      return authenticatedReadRows(engine, measured, equivalent, ceiling).concat([
        {
          scenario: '1 authenticated read, ACCESS_TOKEN_REVOCATION=session, req/s',
          database: engine,
          figure: perSecond(withRevocation.perSecond),
          // Against the same read with the setting off, measured just before.
          ceiling: perSecond(measured.perSecond),
          ratio: percent(withRevocation.perSecond / measured.perSecond),
          target: '≥ 90%',
          met: met(withRevocation.perSecond / measured.perSecond >= 0.9),
        },
      ]);
    }),
};

/**
 * Scenario 1's rows against its two ceilings: the minimal equivalent (jose + pg, the target: ≥ 70 %
 * of its req/s, p99 ≤ 15 ms) and the bare route (fixed bytes, no target: kept for comparison with
 * earlier runs).
 */
export function authenticatedReadRows(engine: Row['database'], measured: LoadResult, equivalent: LoadResult, bare: LoadResult): Row[] {
  const ratio = measured.perSecond / equivalent.perSecond;
  // autocannon resolves latency to the millisecond: a ceiling under 1 ms gives no ratio.
  const p99Of = (ceiling: LoadResult) => (ceiling.p99Ms >= 1 ? ms(ceiling.p99Ms) : '< 1 ms');
  return [
    {
      scenario: '1 authenticated read, req/s (ceiling: minimal equivalent, jose + pg)',
      database: engine,
      figure: perSecond(measured.perSecond),
      ceiling: perSecond(equivalent.perSecond),
      ratio: percent(ratio),
      target: '≥ 70%',
      met: met(ratio >= 0.7),
    },
    {
      scenario: '1 authenticated read, p99 (ceiling: minimal equivalent)',
      database: engine,
      figure: ms(measured.p99Ms),
      ceiling: p99Of(equivalent),
      ratio: equivalent.p99Ms >= 1 ? times(measured.p99Ms / equivalent.p99Ms) : '—',
      target: '≤ 15 ms',
      met: met(measured.p99Ms <= 15),
    },
    {
      scenario: '1 authenticated read, req/s (ceiling: bare route)',
      database: engine,
      figure: perSecond(measured.perSecond),
      ceiling: perSecond(bare.perSecond),
      ratio: percent(measured.perSecond / bare.perSecond),
      target: '—',
      met: 'n/a',
    },
  ];
}

/** 2: logins with correct passwords of 100 users over 8 connections, against raw argon2id verifications 8 at a time. */
export const loginThroughput: Scenario = {
  id: '2',
  name: 'login',
  run: (ctx) =>
    withCleanup(async (onExit) => {
      const { scale, engine } = ctx;
      const db = await ctx.newDatabase();
      const { users } = await seedTenant(db, scale.users);
      const service = await Service.start(db);
      onExit(() => service.stop());
      progress(`${LOGIN_CONNECTIONS} connections logging in ${users.length} users`);
      const { load: measured, cpu } = await withCpu(service, db, () =>
        runHelper<LoadResult>('load', 'login', {
          url: `${service.baseUrl}/api/v2/auth/login`,
          connections: LOGIN_CONNECTIONS,
          warmupMs: scale.warmupMs,
          durationMs: scale.durationMs,
          users,
        }),
      );
      await service.stop();
      progress('ceiling: argon2id verify loop');
      const ceiling = await runHelper<{ perSecond: number; cpuMicrosPerVerify: number }>('argon2-ceiling', 'run', {
        parallelism: LOGIN_CONNECTIONS,
        warmupMs: scale.warmupMs,
        durationMs: scale.durationMs,
      });
      const ratio = measured.perSecond / ceiling.perSecond;
      return [
        { scenario: '2 login', database: engine, figure: perSecond(measured.perSecond), ceiling: perSecond(ceiling.perSecond), ratio: percent(ratio), target: '≥ 85%', met: met(ratio >= 0.85) },
        requestCpuRow('2 login, CPU per login', engine, cpuPer(cpu, measured.answered, 'Plaza'), `${ceiling.cpuMicrosPerVerify} µs (argon2 alone)`, ceiling.cpuMicrosPerVerify),
      ];
    }),
};

/** 3: refresh-token rotation on 100 session chains over 20 connections, against the same two SQL statements per transaction. */
export const refreshThroughput: Scenario = {
  id: '3',
  name: 'refresh',
  run: (ctx) =>
    withCleanup(async (onExit) => {
      const { scale, engine } = ctx;
      const db = await ctx.newDatabase();
      const { users } = await seedTenant(db, SESSIONS);
      const service = await Service.start(db);
      onExit(() => service.stop());
      const pairs = await loginAll(service.baseUrl, users);
      progress(`${REFRESH_CONNECTIONS} connections rotating ${pairs.length} chains`);
      const { load: measured, cpu } = await withCpu(service, db, () =>
        runHelper<LoadResult>('load', 'refresh', {
          url: `${service.baseUrl}/api/v2/auth/refresh`,
          connections: REFRESH_CONNECTIONS,
          warmupMs: scale.warmupMs,
          durationMs: scale.durationMs,
          tokens: pairs.map((pair) => pair.refresh_token),
        }),
      );
      progress('ceiling: UPDATE … RETURNING + INSERT transactions');
      // Measured while the service is up and idle, so that its database CPU can be metered: on the
      // embedded way the database server is the service's own. That CPU includes the seeding of its
      // chains: SESSIONS × 2 inserts, against tens of thousands of rotations.
      const ceilingDatabase = await DatabaseCpu.start(db);
      const ceiling = await dbTask<{ perSecond: number; rotations: number; cpuMs: number }>(db, 'refresh-ceiling', {
        chains: SESSIONS,
        concurrency: REFRESH_CONNECTIONS,
        warmupMs: scale.warmupMs,
        durationMs: scale.durationMs,
      });
      const ceilingCpu = cpuPer({ plazaMs: ceiling.cpuMs, database: await ceilingDatabase.stop() }, ceiling.rotations, 'client');
      await service.stop();
      const ratio = measured.perSecond / ceiling.perSecond;
      return [
        { scenario: '3 refresh', database: engine, figure: perSecond(measured.perSecond), ceiling: perSecond(ceiling.perSecond), ratio: percent(ratio), target: '≥ 50%', met: met(ratio >= 0.5) },
        requestCpuRow('3 refresh, CPU per refresh', engine, cpuPer(cpu, measured.answered, 'Plaza'), `${ceilingCpu.micros ?? 'unknown'} µs (the two statements: ${ceilingCpu.parts})`, ceilingCpu.micros),
      ];
    }),
};

/**
 * The CPU of the service's process and of its database's backends over `work` (a load helper's
 * warm-up and measurement, whose `answered` requests it is divided by): where a request's CPU goes
 * on a machine where the service, PostgreSQL and the load generator share the cores.
 */
async function withCpu(service: Service, db: BenchDatabase, work: () => Promise<LoadResult>): Promise<{ load: LoadResult; cpu: Parameters<typeof cpuPer>[0] }> {
  const plazaFrom = (await service.cpuMs()) ?? Number.NaN;
  const database = await DatabaseCpu.start(db);
  const load = await work();
  const plazaMs = ((await service.cpuMs()) ?? Number.NaN) - plazaFrom;
  return { load, cpu: { plazaMs, database: await database.stop() } };
}

/**
 * A request's CPU against its ceiling's (scenarios 2 and 3): on a CPU-bound machine the ratio of
 * the ceiling's CPU to the request's is about the ratio of their rates, so it says what the target
 * asks of the work around the essential part.
 */
export function requestCpuRow(label: string, engine: Row['database'], cpu: { micros: number | undefined; parts: string }, ceiling: string, ceilingMicros: number | undefined): Row {
  const known = cpu.micros !== undefined && ceilingMicros !== undefined;
  return {
    scenario: `${label} (${cpu.parts})`,
    database: engine,
    figure: cpu.micros === undefined ? 'unknown' : `${cpu.micros} µs`,
    ceiling,
    ratio: known ? percent(ceilingMicros / cpu.micros!) : '—',
    target: '—',
    met: 'n/a',
  };
}
