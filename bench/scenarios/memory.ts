import { met, mib, type Row, type Scenario, type ScenarioContext } from '../lib/scenario.js';
import type { Service } from '../lib/service.js';

/** Samples the embedded server's memory at the end of a scenario (before its service stops). */
export async function recordServerMemory(ctx: ScenarioContext, scenario: string, service: Service): Promise<void> {
  const memory = await service.embeddedServerMemory();
  if (memory) ctx.state.serverMemory.push({ scenario, ...memory });
}

/**
 * 8: the peak resident memory (VmHWM) each service process reached during scenarios 1 and 4 and,
 * on the embedded way, the embedded PostgreSQL server's memory (all its processes) apart from it.
 */
export const memory: Scenario = {
  id: '8',
  name: 'memory',
  needs: ['1', '4'],
  run: async (ctx) => {
    const rows: Row[] = [];
    for (const scenario of ['1', '4']) {
      const samples = ctx.state.peakRss.filter((sample) => sample.scenario === scenario && Number.isFinite(sample.mib));
      if (samples.length === 0) throw new Error(`scenario ${scenario} did not measure in this run`);
      const peak = samples.reduce((a, b) => (b.mib > a.mib ? b : a));
      rows.push({
        scenario: `8 memory: Plaza peak RSS in ${scenario} (${peak.process})`,
        database: ctx.engine,
        figure: mib(peak.mib),
        ceiling: '—',
        ratio: '—',
        target: '≤ 200 MiB',
        met: met(peak.mib <= 200),
      });
      const server = ctx.state.serverMemory.filter((sample) => sample.scenario === scenario);
      if (ctx.engine !== 'embedded') continue;
      if (server.length === 0) throw new Error(`the embedded server's memory was not measured in scenario ${scenario}`);
      const largest = server.reduce((a, b) => (b.rssMiB > a.rssMiB ? b : a));
      rows.push({
        scenario: `8 memory: embedded server RSS in ${scenario} (sum of ${largest.processes} processes)`,
        database: ctx.engine,
        figure: `${mib(largest.rssMiB)} (PSS ${mib(largest.pssMiB)})`,
        ceiling: '—',
        ratio: '—',
        target: 'reported',
        met: 'n/a',
      });
    }
    return rows;
  },
};
