import { DatabaseCpu } from './cpu.js';
import type { BenchDatabase } from './database.js';
import type { Receivers } from './receivers.js';
import type { ScenarioContext } from './scenario.js';

/** What one sender (Plaza's processes, or a peer) did with the notifications of one run. */
export interface DeliveryRun {
  /** Deliveries per second between the first and the last arrival. */
  perSecond: number;
  spanMs: number;
  delivered: number;
  expected: number;
  /** CPU in ms: the sender's processes, and the database's backends (or why they are unknown). */
  cpu: { senderMs: number; database: { ms: number } | { unknown: string } };
}

/** A sender's process, with its CPU time when its metered part began. */
export interface MeteredProcess {
  cpuMs(): Promise<number | undefined>;
  fromMs: number;
}

export interface Sender {
  /** Starts sending; returns its processes, each with its CPU at the end of its start-up. */
  start(): Promise<MeteredProcess[]>;
  isAlive(): boolean;
  /** Its database connections' application_name; without it, every backend of the database is its. */
  applicationName?: string;
}

/**
 * Lets a sender deliver `expected` notifications to the (reset) receivers, and measures it the same
 * way for Plaza and for a peer: the rate between the first and the last arrival, and the CPU spent
 * from the start (each process's own start-up left out) to the last arrival.
 */
export async function meteredDelivery(ctx: ScenarioContext, db: BenchDatabase, receivers: Receivers, expected: number, sender: Sender): Promise<DeliveryRun> {
  await receivers.reset();
  const database = await DatabaseCpu.start(db, sender.applicationName === undefined ? {} : { applicationName: sender.applicationName });
  let processes: MeteredProcess[];
  let arrived;
  try {
    processes = await sender.start();
    arrived = await receivers.waitFor(expected, { stallMs: ctx.scale.stallMs, budgetMs: ctx.scale.deliveryBudgetMs }, () => sender.isAlive());
  } catch (error) {
    await database.stop();
    throw error;
  }
  let senderMs = 0;
  for (const one of processes) senderMs += ((await one.cpuMs()) ?? Number.NaN) - one.fromMs;
  return {
    perSecond: arrived.perSecond,
    spanMs: arrived.spanMs,
    delivered: arrived.unique,
    expected,
    cpu: { senderMs, database: await database.stop() },
  };
}

/** Microseconds of CPU per delivery, whole. */
export const microsPer = (ms: number, deliveries: number) => Math.round((ms * 1000) / deliveries);
