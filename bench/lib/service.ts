import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import type { BenchDatabase } from './database.js';
import { processCpuMs } from './cpu.js';
import { embeddedServerMemory, freePort, peakRssMiB, sleep, track, untrack, wallNow } from './processes.js';

/**
 * The service's entry point: this checkout's build, or BENCH_SERVICE_MAIN (another checkout's
 * dist/src/main.js) for an A/B of two builds on the same seeding, drivers and receivers.
 */
export const MAIN = process.env.BENCH_SERVICE_MAIN ?? fileURLToPath(new URL('../../src/main.js', import.meta.url));

/** Settings every benchmarked service gets; a scenario may add or override some. */
export function serviceEnv(db: BenchDatabase, port: number, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...db.env,
    HOST: '127.0.0.1',
    PORT: String(port),
    // Several services run at once: each operations listener on a free port (Service.start picks one).
    METRICS_PORT: '0',
    // The benchmarks measure the engine with one tenant and one receiver host: the abuse limits would
    // be what they measure otherwise (docs/performance.md).
    TENANT_EVENTS_PER_SECOND: '0',
    TENANT_EVENT_BYTES_PER_HOUR: '0',
    DELIVERY_HOST_BYTES_PER_SECOND: '0',
    TENANT_SEND_BYTES_PER_MINUTE: '0',
    // Request logs at info cost as much as a route here; BENCH_LOG_LEVEL=info measures them too.
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    // Receivers listen on 127.0.0.1, which the address policy refuses by default.
    WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8',
    SHUTDOWN_TIMEOUT_MS: '3000',
    // Traces (`--traces`, or OTEL_EXPORTER_OTLP_ENDPOINT set for the bench): the services export as
    // the bench's environment says (docs/performance.md, "The cost of traces").
    ...otelEnv(),
    ...extra,
  };
}

/** The OTEL_* variables of the bench's environment, passed on to every service. */
function otelEnv(): Record<string, string> {
  return Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[0].startsWith('OTEL_') && entry[1] !== undefined));
}

/** The heap limit Plaza's launch commands give Node (package.json, Dockerfile, deploy/plaza.service; docs/operations.md, "Memory"). */
export const PLAZA_NODE_FLAGS = ['--max-old-space-size=2000'];

/** Node flags for every service process: Plaza's own, then BENCH_NODE_ARGS (a CPU profile, GC tracing), split on spaces. */
function nodeArgs(): string[] {
  return [...PLAZA_NODE_FLAGS, ...(process.env.BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean)];
}

/** The service could not listen: a port found free was taken meanwhile. */
class PortTakenError extends Error {}

/** The real service, `node dist/src/main.js serve`, as a separate process. */
export class Service {
  /** Wall time between spawn() and the first /readyz 200. */
  readyAfterMs: number | undefined;
  /** The process's CPU time at that moment, in ms: what start-up cost, apart from the work after it. */
  cpuAtReadyMs = 0;
  private exit: Promise<void>;
  private exited = false;
  private exitStatus = '';

  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
    /** The operations listener's port: /readyz in every role (a worker has no other). */
    readonly metricsPort: number,
    private readonly logPath: string,
    private readonly db: BenchDatabase,
  ) {
    this.exit = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exited = true;
        this.exitStatus = signal ? `signal ${signal}` : `code ${code}`;
        untrack(child);
        resolve();
      }),
    );
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /**
   * Starts a service on free ports. A port found free can be taken before the service binds it (an
   * outgoing connection of the load gets it as its local port: both come from the ephemeral range);
   * the service then exits at once, and it is started again on other ports.
   */
  static async start(db: BenchDatabase, options: { role?: 'all' | 'api' | 'worker'; env?: Record<string, string> } = {}): Promise<Service> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await Service.startOnce(db, options);
      } catch (error) {
        if (attempt >= 3 || !(error instanceof PortTakenError)) throw error;
      }
    }
  }

  private static async startOnce(db: BenchDatabase, options: { role?: 'all' | 'api' | 'worker'; env?: Record<string, string> }): Promise<Service> {
    const role = options.role ?? 'all';
    const port = await freePort();
    const metricsPort = await freePort();
    const logPath = join(db.dataDir, `service-${role}-${port}.log`);
    const log = openSync(logPath, 'a');
    const startedAt = wallNow();
    const child = spawn(process.execPath, [...nodeArgs(), MAIN, 'serve', '--role', role], {
      env: { PATH: process.env.PATH ?? '', ...serviceEnv(db, port, { METRICS_PORT: String(metricsPort), ...options.env }) },
      stdio: ['ignore', log, log],
    });
    closeSync(log);
    track(child);
    const service = new Service(child, port, metricsPort, logPath, db);
    // The public port answers /readyz once the API is up; a worker's operations listener, just before
    // its delivery loop starts.
    await service.waitReady(role === 'worker' ? `http://127.0.0.1:${metricsPort}` : service.baseUrl, 60_000);
    service.readyAfterMs = wallNow() - startedAt;
    service.cpuAtReadyMs = (await service.cpuMs()) ?? 0;
    return service;
  }

  private async waitReady(baseUrl: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.exited) {
        const log = this.logTail();
        const message = `the service exited during start-up (${this.exitStatus}); its log:\n${log}`;
        throw /the port is already in use/.test(log) ? new PortTakenError(message) : new Error(message);
      }
      try {
        const { statusCode, body } = await request(`${baseUrl}/readyz`);
        await body.dump();
        if (statusCode === 200) return;
      } catch {
        // Not listening yet.
      }
      await sleep(5);
    }
    throw new Error(`the service was not ready within ${timeoutMs} ms:\n${this.logTail()}`);
  }

  logTail(lines = 30): string {
    try {
      return readFileSync(this.logPath, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }

  /** CPU time (user + system) used so far, in ms; undefined once the process is gone. */
  cpuMs(): Promise<number | undefined> {
    return processCpuMs(this.pid);
  }

  /** Peak resident memory so far (VmHWM), in MiB. */
  peakRssMiB(): Promise<number | undefined> {
    return peakRssMiB(this.pid);
  }

  /** The embedded PostgreSQL server's memory (all its processes), apart from this process's. */
  embeddedServerMemory(): ReturnType<typeof embeddedServerMemory> {
    return this.db.engine === 'embedded' ? embeddedServerMemory(this.db.dataDir) : Promise.resolve(undefined);
  }

  isRunning(): boolean {
    return !this.exited;
  }

  /** SIGTERM (graceful shutdown), SIGKILL if it takes more than 15 s. */
  async stop(): Promise<void> {
    if (this.exited) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    await this.exit;
    clearTimeout(timer);
  }
}
