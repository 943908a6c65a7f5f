import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { runningDatabaseUrl, type BenchDatabase } from './database.js';

/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in hundredths of a second on every architecture. */
const TICK_MS = 10;

export interface ProcStat {
  /** The executable's name (not the process title PostgreSQL sets). */
  command: string;
  /** When the process started, in ticks since boot: with the pid, it names one process even if the pid is reused. */
  startTime: string;
  /** User plus system CPU time so far, in ms. */
  cpuMs: number;
}

/** The fields of a /proc/<pid>/stat line that the meters use (proc(5)). */
export function parseProcStat(stat: string): ProcStat {
  // The command may hold spaces and parentheses: the fields after it start past the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of proc(5), utime and stime, and 22, starttime; the list starts at field 3.
  return { command: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), startTime: fields[19]!, cpuMs: (Number(fields[11]) + Number(fields[12])) * TICK_MS };
}

async function procStat(pid: number): Promise<ProcStat | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  return stat === undefined ? undefined : parseProcStat(stat);
}

/** CPU time (user + system) a process of this machine has used so far, in ms; undefined once it is gone. */
export async function processCpuMs(pid: number): Promise<number | undefined> {
  return (await procStat(pid))?.cpuMs;
}

/**
 * The CPU that PostgreSQL spends on one database: its backends (`pg_stat_activity` rows of the
 * database: the clients' connections and autovacuum workers; not the server's shared processes,
 * which serve every database of the server), read from /proc every 250 ms, so the server must
 * run on this machine. A backend there when the meter starts counts from its CPU at that moment,
 * one that appears later from zero (its connection's start included); what a backend spends
 * between its last sample and its exit is missed.
 */
export class DatabaseCpu {
  /** Per backend (pid and start time): CPU at its first sample (0 for one that appeared after the start), and at its latest. */
  private readonly backends = new Map<string, { from: number; last: number }>();
  private readonly timer: NodeJS.Timeout;
  private sampling: Promise<void> = Promise.resolve();
  private notLocal: string | undefined;
  private failure: Error | undefined;

  private constructor(
    private readonly client: pg.Client,
    private readonly applicationName: string | null,
    sampleMs: number,
  ) {
    this.timer = setInterval(() => this.queueSample(false), sampleMs);
  }

  /**
   * Starts metering the database's backends, or only those of one `application_name`; the
   * database's server must be running. `sampleMs` is for the tests.
   */
  static async start(db: BenchDatabase, options: { applicationName?: string; sampleMs?: number } = {}): Promise<DatabaseCpu> {
    const client = new pg.Client({ connectionString: await runningDatabaseUrl(db) });
    await client.connect();
    const meter = new DatabaseCpu(client, options.applicationName ?? null, options.sampleMs ?? 250);
    meter.queueSample(true);
    await meter.sampling;
    return meter;
  }

  private queueSample(first: boolean): void {
    this.sampling = this.sampling.then(() => this.sample(first)).catch((error: Error) => void (this.failure ??= error));
  }

  private async sample(first: boolean): Promise<void> {
    // This meter's own backend works for the meter, not for the run.
    const { rows } = await this.client.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND ($1::text IS NULL OR application_name = $1::text)`,
      [this.applicationName],
    );
    for (const { pid } of rows) {
      const stat = await procStat(pid);
      if (!stat) continue; // It exited in between.
      if (stat.command !== 'postgres') this.notLocal ??= `backend ${pid} is not a PostgreSQL process of this machine (${stat.command})`;
      const key = `${pid}/${stat.startTime}`;
      const known = this.backends.get(key);
      if (known) known.last = stat.cpuMs;
      else this.backends.set(key, { from: first ? stat.cpuMs : 0, last: stat.cpuMs });
    }
  }

  /**
   * The backends' CPU since the start, in ms, after a last sample; undefined when it cannot be
   * known (a server on another machine, a failed sample), with the reason.
   */
  async stop(): Promise<{ ms: number } | { unknown: string }> {
    clearInterval(this.timer);
    this.queueSample(false);
    await this.sampling;
    await this.client.end().catch(() => {});
    if (this.failure) return { unknown: `a sample failed: ${this.failure.message}` };
    if (this.notLocal) return { unknown: this.notLocal };
    let ms = 0;
    for (const { from, last } of this.backends.values()) ms += last - from;
    return { ms };
  }
}
