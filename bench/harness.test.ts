import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ms } from './lib/scenario.js';
import { median, percentile } from './lib/stats.js';
import { rowLine } from './lib/table.js';
import { select } from './scenarios/index.js';

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
    assert.equal(select([]).length, 10);
    assert.deepEqual(select(['tenant-fairness']).map((s) => s.id), ['10']);
    assert.throws(() => select(['42']), /unknown scenario "42"/);
  });

  it('prints rows as Markdown table lines, escaping pipes, and says when an event never arrived', () => {
    const line = rowLine({ scenario: 'x | y', database: 'embedded', figure: '1/s', ceiling: '2/s', ratio: '50%', target: '≥ 35%', met: 'yes' });
    assert.equal(line, '| x \\| y | embedded | 1/s | 2/s | 50% | ≥ 35% | yes |');
    assert.equal(ms(Infinity), 'not arrived');
    assert.equal(ms(3.14159), '3.14 ms');
  });
});
