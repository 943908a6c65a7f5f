import type { BenchDatabase, Engine } from './database.js';

/** One line of the results table. */
export interface Row {
  scenario: string;
  database: Engine;
  figure: string;
  ceiling: string;
  ratio: string;
  target: string;
  /** n/a: no target applies on this database; BROKEN: the scenario could not measure. */
  met: 'yes' | 'no' | 'n/a' | 'BROKEN';
}

/** How much each scenario does: the full run, or the few-seconds smoke pass CI runs. */
export interface Scale {
  smoke: boolean;
  warmupMs: number;
  durationMs: number;
  users: number;
  events: number;
  latencyRate: number;
  latencyMs: number;
  fanOut: number;
  startups: number;
  /** Longest a delivery phase may go without progress before the scenario counts as broken. */
  stallMs: number;
  /**
   * Full runs: longest a delivery phase is waited for; past it the figure is the rate of what
   * arrived so far. Smoke runs have none: there, deliveries that stop arriving mean broken.
   */
  deliveryBudgetMs?: number;
}

export function scaleFor(smoke: boolean): Scale {
  return smoke
    ? { smoke, warmupMs: 1000, durationMs: 2000, users: 100, events: 200, latencyRate: 200, latencyMs: 2000, fanOut: 500, startups: 2, stallMs: 30_000 }
    : { smoke, warmupMs: 3000, durationMs: 10_000, users: 100, events: 20_000, latencyRate: 200, latencyMs: 20_000, fanOut: 10_000, startups: 5, stallMs: 120_000, deliveryBudgetMs: 150_000 };
}

/** What scenarios of one database share within a run (scenario 7 and 8 use what 1 and 4 measured). */
export interface RunState {
  deliveriesPerSecond?: number;
  peakRss: { scenario: string; process: string; mib: number }[];
  /** The embedded server's memory next to each peakRss sample (embedded way only). */
  serverMemory: { scenario: string; rssMiB: number; pssMiB: number; processes: number }[];
}

export interface ScenarioContext {
  engine: Engine;
  scale: Scale;
  state: RunState;
  /** A fresh database for this scenario, disposed of when the scenario ends. */
  newDatabase(): Promise<BenchDatabase>;
}

export interface Scenario {
  id: string;
  name: string;
  /** Scenarios whose measurements this one needs from the same run. */
  needs?: string[];
  run(ctx: ScenarioContext): Promise<Row[]>;
}

// Formatting of figures, the same in every scenario.
export const perSecond = (value: number) => `${Math.round(value).toLocaleString('en-US')}/s`;
export const ms = (value: number) => (Number.isFinite(value) ? `${value < 10 ? value.toFixed(2) : value.toFixed(1)} ms` : 'not arrived');
export const seconds = (valueMs: number) => `${(valueMs / 1000).toFixed(2)} s`;
export const mib = (value: number) => `${Math.round(value)} MiB`;
export const percent = (value: number) => `${Math.round(value * 100)}%`;
export const times = (value: number) => `${value.toFixed(2)}×`;
export const met = (ok: boolean): Row['met'] => (ok ? 'yes' : 'no');
