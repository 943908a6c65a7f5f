import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualClock } from '../../clock.js';
import type { Queryable } from '../../db/database.js';
import { createMetrics } from '../../metrics.js';
import { startQueueGauges } from './gauges.js';

test('a queue measure that ends after a later one does not set its older values over the later ones', async () => {
  // The measure started with the process answers last (a slow first query), after the one asked later.
  const answers: ((due: number) => void)[] = [];
  const db: Queryable = {
    query: <Row>() =>
      new Promise<{ rows: Row[]; rowCount: number }>((resolve) => {
        answers.push((due) => resolve({ rows: [{ due, oldest_due: null, delivering: 0, failed: 0 } as Row], rowCount: 1 }));
      }),
    exec: async () => {},
  };
  const metrics = createMetrics();
  const gauges = startQueueGauges({ db, clock: new ManualClock(new Date()), metrics, intervalSeconds: 3600 });
  try {
    const later = gauges.refresh();
    assert.equal(answers.length, 2);
    answers[1]!(7);
    await later;
    answers[0]!(0);
    await new Promise((resolve) => setImmediate(resolve));
    const text = await metrics.registry.metrics();
    assert.match(text, /^plaza_deliveries_due 7$/m);
  } finally {
    gauges.stop();
  }
});
