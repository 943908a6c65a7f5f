import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DeliveryRun } from './lib/delivery-run.js';
import { ms } from './lib/scenario.js';
import { median, percentile } from './lib/stats.js';
import { rowLine } from './lib/table.js';
import { cpuPer, cpuRow, fleetRows, peerRows } from './scenarios/delivery-rows.js';
import { authenticatedReadRows, requestCpuRow } from './scenarios/api.js';
import { select } from './scenarios/index.js';

const run = (perSecond: number, senderMs: number, database: DeliveryRun['cpu']['database']): DeliveryRun => ({
  perSecond,
  spanMs: 20_000,
  delivered: 100_000,
  expected: 100_000,
  cpu: { senderMs, database },
});

// The harness's own logic, not performance: benchmarks never assert timings (docs/performance.md).
describe('bench harness', () => {
  it('takes percentiles by nearest rank', () => {
    const values = [5, 1, 4, 2, 3, 6, 7, 8, 9, 10];
    assert.equal(percentile(values, 50), 5);
    assert.equal(percentile(values, 99), 10);
    assert.equal(percentile(values, 0), 1);
    assert.equal(median([3, 1, 2]), 2);
    assert.ok(Number.isNaN(percentile([], 50)));
    assert.equal(percentile([1, Infinity], 99), Infinity);
  });

  it('adds the scenarios a selection needs from the same run, in table order', () => {
    assert.deepEqual(select(['7']).map((s) => s.id), ['4', '7']);
    assert.deepEqual(select(['8', '2']).map((s) => s.id), ['1', '2', '4', '8']);
    assert.deepEqual(select(['delivery-throughput']).map((s) => s.id), ['4']);
    assert.equal(select([]).length, 12);
    assert.deepEqual(select(['tenant-fairness']).map((s) => s.id), ['10']);
    assert.deepEqual(select(['sellers-in-a-shared-webhook']).map((s) => s.id), ['11']);
    assert.throws(() => select(['42']), /unknown scenario "42"/);
  });

  it('prints rows as Markdown table lines, escaping pipes, and says when an event never arrived', () => {
    const line = rowLine({ scenario: 'x | y', database: 'embedded', figure: '1/s', ceiling: '2/s', ratio: '50%', target: '≥ 35%', met: 'yes' });
    assert.equal(line, '| x \\| y | embedded | 1/s | 2/s | 50% | ≥ 35% | yes |');
    assert.equal(ms(Infinity), 'not arrived');
    assert.equal(ms(3.14159), '3.14 ms');
  });

  it("prints the peer's rate and CPU against Plaza's as Plaza/peer, and a fleet's rate against one worker's", () => {
    const plaza = run(5000, 14_000, { ms: 18_000 }); // 140 + 180 µs per delivery
    const peer = run(4000, 12_000, { ms: 7_000 }); // 120 + 70 µs
    const [rate, cpu] = peerRows('postgres', plaza, peer);
    assert.deepEqual(
      [rate!.figure, rate!.ceiling, rate!.ratio, rate!.target, rate!.met],
      ['4,000/s', '5,000/s (Plaza, 1 worker)', '1.25×', 'Plaza ≥ 1.25×', 'yes'],
    );
    assert.match(cpu!.scenario, /\(peer 120 µs \+ PostgreSQL 70 µs\)/);
    assert.deepEqual([cpu!.figure, cpu!.ceiling, cpu!.ratio], ['190 µs', '320 µs (Plaza, 1 worker)', '1.68×']);
    assert.equal(peerRows('postgres', run(4900, 1, { ms: 1 }), peer)[0]!.met, 'no');

    const [fleet, fleetCpu] = fleetRows('embedded', 4, run(4750, 10_000, { ms: 10_000 }), plaza);
    assert.deepEqual([fleet!.scenario, fleet!.ratio, fleet!.met], ['4 delivery throughput, 4 workers (100000 in 20.00 s)', '95%', 'yes']);
    assert.deepEqual([fleetCpu!.scenario, fleetCpu!.figure, fleetCpu!.met], ['4 CPU per delivery, 4 workers (Plaza 100 µs + PostgreSQL 100 µs)', '200 µs', 'yes']);
  });

  it('rates scenario 1 against the minimal equivalent (≥ 70 %, p99 ≤ 15 ms) and keeps the bare route as a row without target', () => {
    const load = (perSecond: number, p99Ms: number) => ({ perSecond, p99Ms, p50Ms: 1, answered: perSecond * 13 });
    const [rate, p99, bare] = authenticatedReadRows('postgres', load(7000, 12), load(10_000, 8), load(70_000, 0));
    assert.deepEqual([rate!.ceiling, rate!.ratio, rate!.target, rate!.met], ['10,000/s', '70%', '≥ 70%', 'yes']);
    assert.match(rate!.scenario, /minimal equivalent/);
    assert.deepEqual([p99!.figure, p99!.ceiling, p99!.ratio, p99!.met], ['12.0 ms', '8.00 ms', '1.50×', 'yes']);
    assert.deepEqual([bare!.ceiling, bare!.ratio, bare!.target, bare!.met], ['70,000/s', '10%', '—', 'n/a']);
    const [slow, late] = authenticatedReadRows('postgres', load(6900, 16), load(10_000, 0.5), load(70_000, 0));
    assert.deepEqual([slow!.met, late!.met, late!.ceiling, late!.ratio], ['no', 'no', '< 1 ms', '—']);
  });

  it('puts a request\'s CPU beside its ceiling\'s: Plaza and PostgreSQL per request, the ratio the ceiling\'s share', () => {
    const login = requestCpuRow('2 login, CPU per login', 'postgres', cpuPer({ plazaMs: 16_000, database: { ms: 3_000 } }, 1_000, 'Plaza'), '12000 µs (argon2 alone)', 12_000);
    assert.deepEqual(
      [login.scenario, login.figure, login.ceiling, login.ratio, login.met],
      ['2 login, CPU per login (Plaza 16000 µs + PostgreSQL 3000 µs)', '19000 µs', '12000 µs (argon2 alone)', '63%', 'n/a'],
    );
    const remote = requestCpuRow('3 refresh, CPU per refresh', 'postgres', cpuPer({ plazaMs: 800, database: { unknown: 'not local' } }, 1_000, 'Plaza'), 'unknown µs', undefined);
    assert.deepEqual([remote.figure, remote.ratio], ['unknown', '—']);
  });

  it('says why the CPU per delivery is unknown instead of printing a part of it', () => {
    const row = cpuRow('1 worker', 'postgres', run(5000, 14_000, { unknown: 'backend 7 is not a PostgreSQL process of this machine (java)' }));
    assert.equal(row.scenario, '4 CPU per delivery, 1 worker (Plaza 140 µs, PostgreSQL unknown: backend 7 is not a PostgreSQL process of this machine (java))');
    assert.deepEqual([row.figure, row.met], ['unknown', 'n/a']);
  });
});
