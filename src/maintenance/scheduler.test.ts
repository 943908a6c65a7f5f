import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import pino from 'pino';
import { ManualClock } from '../clock.js';
import type { Database } from '../db/database.js';
import { openPostgres } from '../db/postgres.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import { waitFor } from '../testing/wait.js';
import { startMaintenance, type MaintenanceJob, type MaintenanceScheduler } from './scheduler.js';

const INTERVAL = 60;
const logger = pino({ level: 'silent' });

/** A job that counts its runs in this test process and takes a moment, so that runs of several schedulers could overlap. */
function countingJob(name: string, counts: Map<string, number>): MaintenanceJob {
  return {
    name,
    intervalSeconds: INTERVAL,
    run: async (db) => {
      counts.set(name, (counts.get(name) ?? 0) + 1);
      await db.query(`SELECT pg_sleep(0.02)`);
      return 0;
    },
  };
}

/** A job whose every run waits until released; `waiting` holds the runs in progress. */
function blockingJob(name: string) {
  const state = {
    runs: 0,
    waiting: [] as (() => void)[],
    release: () => state.waiting.shift()?.(),
    job: {
      name,
      intervalSeconds: INTERVAL,
      run: async () => {
        state.runs += 1;
        await new Promise<void>((resolve) => state.waiting.push(resolve));
        return 0;
      },
    } satisfies MaintenanceJob,
  };
  return state;
}

/** Waits (at most 5 s) until `done()` holds. */
const until = (done: () => boolean) => waitFor(done, { timeoutMs: 5000 });

describe('maintenance scheduler', { timeout: 30_000 }, () => {
  let db: TestDatabase;
  let clock: ManualClock;
  // Each scheduler has a pool of its own, as each process of an installation has.
  const pools: Database[] = [];
  const schedulers: MaintenanceScheduler[] = [];
  const pool = () => {
    const opened = openPostgres({ connectionString: db.url, poolSize: 3, connectTimeoutMs: 3000, statementTimeoutMs: 10_000 });
    pools.push(opened);
    return opened;
  };
  const start = (jobs: MaintenanceJob[], own = pool()) => {
    const scheduler = startMaintenance({ db: own, clock, logger }, jobs);
    schedulers.push(scheduler);
    return scheduler;
  };
  const runs = async () => {
    const { rows } = await db.query<{ job: string; runs: number; last_error: string | null }>(`SELECT job, runs, last_error FROM maintenance_runs ORDER BY job`);
    return rows;
  };

  before(async () => {
    db = await createTestDatabase();
  });
  beforeEach(async () => {
    clock = new ManualClock(new Date());
    await db.query(`DELETE FROM maintenance_runs`);
  });
  afterEach(async () => {
    await Promise.all(schedulers.splice(0).map((scheduler) => scheduler.stop()));
    await Promise.all(pools.splice(0).map((opened) => opened.close()));
  });
  after(() => db?.close());

  test('three schedulers on their own pools run each job once per interval between them', async () => {
    const counts = new Map<string, number>();
    const jobs = [countingJob('prune-a', counts), countingJob('prune-b', counts)];
    const three = [start(jobs), start(jobs), start(jobs)];
    const passes = () => Promise.all(three.map((scheduler) => scheduler.runDue()));
    // The passes at start, and one more each: the jobs ran once.
    await passes();
    assert.deepEqual(Object.fromEntries(counts), { 'prune-a': 1, 'prune-b': 1 });
    for (let interval = 1; interval <= 4; interval++) {
      clock.advanceSeconds(INTERVAL / 2);
      await passes();
      assert.deepEqual(Object.fromEntries(counts), { 'prune-a': interval, 'prune-b': interval }, 'half an interval later: not due');
      clock.advanceSeconds(INTERVAL / 2);
      await passes();
      await passes();
      assert.deepEqual(Object.fromEntries(counts), { 'prune-a': interval + 1, 'prune-b': interval + 1 }, `interval ${interval}`);
    }
    assert.deepEqual(await runs(), [
      { job: 'prune-a', runs: 5, last_error: null },
      { job: 'prune-b', runs: 5, last_error: null },
    ]);
  });

  test('while one process runs a job, another skips it, however overdue', async () => {
    const slow = blockingJob('slow');
    const first = start([slow.job]);
    await until(() => slow.waiting.length === 1);
    clock.advanceSeconds(3 * INTERVAL);
    const second = start([slow.job]);
    await second.runDue();
    assert.equal(slow.runs, 1, 'the second process did not run it beside the first');
    slow.release();
    // The first records its run when it ends, at the time it started: three intervals ago.
    await first.stop();
    const next = second.runDue();
    await until(() => slow.waiting.length === 1);
    slow.release();
    await next;
    assert.equal(slow.runs, 2);
    assert.deepEqual((await runs()).map((row) => row.runs), [2]);
  });

  test('a job that throws does not stop the jobs after it, nor the next passes; its failure is recorded', async () => {
    const counts = new Map<string, number>();
    let thrown = 0;
    const broken: MaintenanceJob = {
      name: 'broken',
      intervalSeconds: INTERVAL,
      run: async () => {
        thrown += 1;
        throw new Error('disk on fire');
      },
    };
    const scheduler = start([broken, countingJob('after-broken', counts)]);
    await scheduler.runDue();
    await scheduler.runDue();
    assert.equal(counts.get('after-broken'), 1);
    assert.equal(thrown, 1, 'a failed run counts as a run: not tried again at every pass');
    clock.advanceSeconds(INTERVAL);
    await scheduler.runDue();
    assert.equal(counts.get('after-broken'), 2);
    assert.equal(thrown, 2, 'tried again after its interval');
    assert.deepEqual(await runs(), [
      { job: 'after-broken', runs: 2, last_error: null },
      { job: 'broken', runs: 2, last_error: 'disk on fire' },
    ]);
  });

  test('stop() waits for the job in progress and the pool is not used after it', async () => {
    const slow = blockingJob('slow-stop');
    const own = pool();
    let calls = 0;
    const watched: Database = {
      ...own,
      query: (...args) => (calls++, own.query(...args)),
      transaction: (...args) => (calls++, own.transaction(...args)),
    };
    const scheduler = start([slow.job], watched);
    await until(() => slow.waiting.length === 1);
    let stopped = false;
    const stopping = scheduler.stop().then(() => (stopped = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(stopped, false, 'stop() waits for the running job');
    slow.release();
    await stopping;
    // The run was recorded before stop() resolved.
    assert.deepEqual((await runs()).map((row) => row.runs), [1]);
    const callsAtStop = calls;
    clock.advanceSeconds(2 * INTERVAL);
    await scheduler.runDue();
    assert.equal(calls, callsAtStop);
    assert.equal(slow.runs, 1);
  });

  test('a job with interval 0 is not run by this process', async () => {
    const counts = new Map<string, number>();
    const scheduler = start([{ ...countingJob('off', counts), intervalSeconds: 0 }]);
    await scheduler.runDue();
    assert.equal(counts.size, 0);
    assert.deepEqual(await runs(), []);
  });
});
