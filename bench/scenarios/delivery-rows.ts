import { microsPer, type DeliveryRun } from '../lib/delivery-run.js';
import { met, percent, perSecond, seconds, times, type Row } from '../lib/scenario.js';

/** The aim for CPU per delivery, the sender's processes and PostgreSQL's backends together, on the 2-core host. */
const CPU_TARGET_MICROS = 200;
/** Plaza with one worker against the graphile-worker peer, same run. */
const PEER_TARGET = 1.25;
/** Several workers on one database against one: no serialisation between them. */
const FLEET_TARGET = 0.95;

/** "20000", or "7312 of 20000 (stopped at the time budget)" when the wait budget ran out first. */
export const howMany = (run: DeliveryRun) => (run.delivered >= run.expected ? `${run.expected}` : `${run.delivered} of ${run.expected}, budget reached,`);

/** CPU per delivery of a run: the total (undefined when the database's part is unknown) and its parts. */
export function cpuPerDelivery(run: DeliveryRun, sender: string): { micros: number | undefined; parts: string } {
  return cpuPer({ plazaMs: run.cpu.senderMs, database: run.cpu.database }, run.delivered, sender);
}

/** CPU per unit of work (a delivery, an event): the total (undefined when the database's part is unknown) and its parts. */
export function cpuPer(cpu: { plazaMs: number; database: { ms: number } | { unknown: string } }, units: number, sender: string): { micros: number | undefined; parts: string } {
  const own = microsPer(cpu.plazaMs, units);
  if ('unknown' in cpu.database) return { micros: undefined, parts: `${sender} ${own} µs, PostgreSQL unknown: ${cpu.database.unknown}` };
  const database = microsPer(cpu.database.ms, units);
  return { micros: own + database, parts: `${sender} ${own} µs + PostgreSQL ${database} µs` };
}

const micros = (value: number | undefined) => (value === undefined ? 'unknown' : `${value} µs`);

export function cpuRow(label: string, engine: Row['database'], run: DeliveryRun, scenario = '4'): Row {
  const cpu = cpuPerDelivery(run, 'Plaza');
  return {
    scenario: `${scenario} CPU per delivery, ${label} (${cpu.parts})`,
    database: engine,
    figure: micros(cpu.micros),
    ceiling: '—',
    ratio: '—',
    target: `≤ ${CPU_TARGET_MICROS} µs`,
    met: cpu.micros === undefined ? 'n/a' : met(cpu.micros <= CPU_TARGET_MICROS),
  };
}

/** The peer's rows: its rate against Plaza's (one worker) in the same run, and its CPU against Plaza's. */
export function peerRows(engine: Row['database'], plaza: DeliveryRun, peer: DeliveryRun): Row[] {
  const ratio = plaza.perSecond / peer.perSecond;
  const plazaCpu = cpuPerDelivery(plaza, 'Plaza');
  const peerCpu = cpuPerDelivery(peer, 'peer');
  return [
    {
      scenario: `4 peer graphile-worker (${howMany(peer)} in ${seconds(peer.spanMs)}), ratio Plaza/peer`,
      database: engine,
      figure: perSecond(peer.perSecond),
      ceiling: `${perSecond(plaza.perSecond)} (Plaza, 1 worker)`,
      ratio: times(ratio),
      target: `Plaza ≥ ${times(PEER_TARGET)}`,
      met: met(ratio >= PEER_TARGET),
    },
    {
      scenario: `4 peer graphile-worker, CPU per delivery (${peerCpu.parts}), ratio Plaza/peer`,
      database: engine,
      figure: micros(peerCpu.micros),
      ceiling: `${micros(plazaCpu.micros)} (Plaza, 1 worker)`,
      ratio: plazaCpu.micros === undefined || peerCpu.micros === undefined ? '—' : times(plazaCpu.micros / peerCpu.micros),
      target: 'reported',
      met: 'n/a',
    },
  ];
}

/** A fleet's rows: its rate against one worker's in the same run, and its CPU per delivery. */
export function fleetRows(engine: Row['database'], workers: number, fleet: DeliveryRun, single: DeliveryRun): Row[] {
  const growth = fleet.perSecond / single.perSecond;
  return [
    {
      scenario: `4 delivery throughput, ${workers} workers (${howMany(fleet)} in ${seconds(fleet.spanMs)})`,
      database: engine,
      figure: perSecond(fleet.perSecond),
      ceiling: `${perSecond(single.perSecond)} (1 worker)`,
      ratio: percent(growth),
      target: `≥ ${percent(FLEET_TARGET)}`,
      met: met(growth >= FLEET_TARGET),
    },
    cpuRow(`${workers} workers`, engine, fleet),
  ];
}
