import type { Scenario } from '../lib/scenario.js';
import { authenticatedRead, loginThroughput, refreshThroughput } from './api.js';
import { deliveryThroughput, noisyNeighbour, publicationUpdates } from './delivery.js';
import { fanOut } from './fan-out.js';
import { tenantFairness } from './fairness.js';
import { deliveryLatency } from './latency.js';
import { memory } from './memory.js';
import { sellerFairness } from './sellers.js';
import { startUp } from './startup.js';

export const SCENARIOS: Scenario[] = [authenticatedRead, loginThroughput, refreshThroughput, deliveryThroughput, deliveryLatency, fanOut, noisyNeighbour, memory, startUp, tenantFairness, sellerFairness, publicationUpdates];

export const USAGE = `Usage: npm run bench -- [--smoke] [--traces] [--db embedded|postgres] [--repeat n] [scenario …]

Scenarios (number or name): ${SCENARIOS.map((s) => `${s.id} ${s.name}`).join(', ')}.
Runs on the embedded database, and on PostgreSQL too when DATABASE_URL is set.
--smoke runs each scenario for a few seconds (CI); it fails only when a scenario cannot measure.
--repeat n runs the scenarios n times over, one after the other (rows of every round are printed).
--traces makes every service export traces over OTLP/HTTP: to OTEL_EXPORTER_OTLP_ENDPOINT when set, else to a sink of the bench's that discards them.`;

/** The scenarios named (by number or name), with the ones they need from the same run, in table order. */
export function select(names: string[]): Scenario[] {
  const wanted = new Set<string>();
  const add = (scenario: Scenario) => {
    for (const need of scenario.needs ?? []) add(SCENARIOS.find((s) => s.id === need)!);
    wanted.add(scenario.id);
  };
  for (const name of names) {
    const scenario = SCENARIOS.find((s) => s.id === name || s.name === name || s.name.replace(/ /g, '-') === name);
    if (!scenario) throw new Error(`unknown scenario "${name}"\n\n${USAGE}`);
    add(scenario);
  }
  return names.length === 0 ? SCENARIOS : SCENARIOS.filter((s) => wanted.has(s.id));
}

