import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../../src/testing/test-database.js';
import { DatabaseCpu, parseProcStat, processCpuMs } from './cpu.js';
import type { BenchDatabase } from './database.js';

// The meters of scenario 4's CPU rows, on this machine's processes and a real database's backends.
describe('bench CPU meters', () => {
  it('reads the command, start time and user + system CPU of a /proc/<pid>/stat line, whatever the command holds', () => {
    // Fields 14 (utime) 250 and 15 (stime) 30 ticks, 22 (starttime) 98765.
    const line = '4242 (a b) (c)) S 1 4242 4242 0 -1 4194304 100 0 0 0 250 30 0 0 20 0 1 0 98765 222445568 7424 18446744073709551615';
    assert.deepEqual(parseProcStat(line), { command: 'a b) (c)', startTime: '98765', cpuMs: 2800 });
  });

  it("counts this process's CPU as it grows, and nothing for a process that is gone", async () => {
    const before = (await processCpuMs(process.pid))!;
    const used = process.cpuUsage();
    while ((process.cpuUsage(used).user + process.cpuUsage(used).system) / 1000 < 300) Math.sqrt(Math.random());
    const grown = (await processCpuMs(process.pid))! - before;
    // The kernel counts in 10 ms ticks, by sampling: about the 300 ms spent, not to the tick.
    assert.ok(grown >= 200 && grown <= 1000, `grew by ${grown} ms`);
    assert.equal(await processCpuMs(2 ** 22 + 1), undefined); // above the kernel's largest pid
  });

  describe('on a database', () => {
    let db: TestDatabase;
    let bench: BenchDatabase;
    before(async () => {
      db = await createTestDatabase();
      bench = { engine: 'postgres', dataDir: '', databaseUrl: db.url, env: {}, dispose: async () => {} };
    });
    after(() => db.close());

    async function busyClient(applicationName: string): Promise<pg.Client> {
      const client = new pg.Client({ connectionString: db.url, application_name: applicationName });
      await client.connect();
      return client;
    }

    it("counts the work of the database's backends, of one application_name when asked, a backend that came after the start from zero", async () => {
      const everyone = await DatabaseCpu.start(bench);
      // No sample between the start and the stop: the busy backend is first seen at the stop.
      const busyOnly = await DatabaseCpu.start(bench, { applicationName: 'busy', sampleMs: 600_000 });
      const otherOnly = await DatabaseCpu.start(bench, { applicationName: 'someone-else' });
      const busy = await busyClient('busy');
      try {
        await busy.query('SELECT count(*) FROM generate_series(1, 3000000)');
        const [all, mine, other] = await Promise.all([everyone.stop(), busyOnly.stop(), otherOnly.stop()]);
        assert.ok('ms' in mine && mine.ms > 0, JSON.stringify(mine));
        assert.ok('ms' in all && all.ms >= mine.ms, JSON.stringify(all));
        // The other meters' own backends are not the application's, and each leaves its own out.
        assert.deepEqual(other, { ms: 0 });
      } finally {
        await busy.end();
      }
    });

    it("leaves out what a backend spent before the meter started", async () => {
      const busy = await busyClient('earlier');
      try {
        await busy.query('SELECT count(*) FROM generate_series(1, 3000000)');
        const meter = await DatabaseCpu.start(bench, { applicationName: 'earlier' });
        assert.deepEqual(await meter.stop(), { ms: 0 });
      } finally {
        await busy.end();
      }
    });
  });
});
