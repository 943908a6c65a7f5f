import { met, mib, type Row, type Scenario } from '../lib/scenario.js';

/** 8: the peak resident memory (VmHWM) each service process reached during scenarios 1 and 4. */
export const memory: Scenario = {
  id: '8',
  name: 'memory',
  needs: ['1', '4'],
  run: async (ctx) => {
    const limit = ctx.engine === 'postgres' ? 200 : 450;
    const rows: Row[] = [];
    for (const scenario of ['1', '4']) {
      const samples = ctx.state.peakRss.filter((sample) => sample.scenario === scenario && Number.isFinite(sample.mib));
      if (samples.length === 0) throw new Error(`scenario ${scenario} did not measure in this run`);
      const peak = samples.reduce((a, b) => (b.mib > a.mib ? b : a));
      rows.push({
        scenario: `8 memory: peak RSS in ${scenario} (${peak.process})`,
        database: ctx.engine,
        figure: mib(peak.mib),
        ceiling: '—',
        ratio: '—',
        target: `≤ ${limit} MiB`,
        met: met(peak.mib <= limit),
      });
    }
    return rows;
  },
};
