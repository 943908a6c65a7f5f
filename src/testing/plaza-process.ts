import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { projectRoot } from '../paths.js';
import { exited, type ExitStatus } from './child-process.js';
import { waitFor } from './wait.js';

/** The CLI as users run it: `node dist/src/main.js …`. */
export const MAIN_JS = join(projectRoot, 'dist/src/main.js');

export type Role = 'all' | 'api' | 'worker';

/** A port nobody listens on right now (the service does not report PORT=0's choice). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Keys shared by every process of one test, so a token issued by one verifies on the others. */
export function sharedKeyEnv(): Record<string, string> {
  return {
    // A P-256 key: ES256, JWT_ALGORITHM's default.
    JWT_PRIVATE_KEY: generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    JWT_KEY_ID: `rel-${randomBytes(4).toString('hex')}`,
    SECRETS_KEY: randomBytes(32).toString('base64'),
  };
}

/** Settings that make faults observable within seconds instead of minutes. */
export const FAST_DELIVERY_ENV: Record<string, string> = {
  LOG_LEVEL: 'warn',
  HOST: '127.0.0.1',
  WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8',
  DELIVERY_RETRY_SCHEDULE: '1s,1s,2s',
  DELIVERY_RETRY_JITTER: '0',
  DELIVERY_LEASE_SECONDS: '5',
  DELIVERY_POLL_INTERVAL_MS: '200',
  // The fault tests push thousands of events from one tenant; the intake limit has its own tests.
  TENANT_EVENTS_PER_SECOND: '0',
};

export interface PlazaProcess {
  readonly role: Role;
  readonly port: number | undefined;
  /** http://127.0.0.1:<port> for roles that serve HTTP. */
  readonly url: string;
  /** http://127.0.0.1:<METRICS_PORT>: /metrics, /healthz and /readyz, in every role. */
  readonly metricsUrl: string;
  readonly child: ChildProcess;
  readonly exited: Promise<ExitStatus>;
  output(): string;
  isRunning(): boolean;
  kill(signal?: NodeJS.Signals): Promise<ExitStatus>;
}

const running = new Set<PlazaProcess>();

/** Spawns `plaza serve --role <role>` and waits until it is ready (readyz, or the worker's start line). */
export async function startPlaza(env: Record<string, string>, options: { role?: Role; port?: number; readyTimeoutMs?: number } = {}): Promise<PlazaProcess> {
  const role = options.role ?? 'all';
  const port = role === 'worker' ? undefined : (options.port ?? (await freePort()));
  const childEnv: Record<string, string> = { PATH: process.env.PATH ?? '', ...FAST_DELIVERY_ENV, ...env };
  if (port !== undefined) childEnv.PORT = String(port);
  // Every process has an operations listener; each gets its own port unless the test chose one.
  childEnv.METRICS_PORT ??= String(await freePort());
  // The worker has no HTTP port: its readiness is its own log line, at info.
  if (role === 'worker') childEnv.LOG_LEVEL = 'info';
  const child = spawn(process.execPath, [MAIN_JS, 'serve', '--role', role], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const append = (chunk: Buffer) => {
    out += chunk.toString();
    if (out.length > 2_000_000) out = out.slice(-1_000_000);
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  const exit = exited(child);
  let alive = true;
  void exit.then(() => (alive = false));
  const proc: PlazaProcess = {
    role,
    port,
    url: `http://127.0.0.1:${port ?? 0}`,
    metricsUrl: `http://127.0.0.1:${childEnv.METRICS_PORT}`,
    child,
    exited: exit,
    output: () => out,
    isRunning: () => alive,
    async kill(signal = 'SIGKILL') {
      if (alive) child.kill(signal);
      const status = await exit;
      running.delete(proc);
      return status;
    },
  };
  running.add(proc);
  void exit.then(() => running.delete(proc));
  try {
    await waitReady(proc, options.readyTimeoutMs ?? 60_000);
  } catch (error) {
    await proc.kill('SIGKILL');
    throw error;
  }
  return proc;
}

async function waitReady(proc: PlazaProcess, timeoutMs: number): Promise<void> {
  await waitFor(async () => {
    if (!proc.isRunning()) throw new Error(`plaza (${proc.role}) exited before it was ready (${JSON.stringify(await proc.exited)}):\n${proc.output().slice(-4000)}`);
    if (proc.role === 'worker') return proc.output().includes('delivery worker started');
    try {
      return (await fetch(`${proc.url}/readyz`, { signal: AbortSignal.timeout(2000) })).status === 200;
    } catch {
      return false; // not listening yet
    }
  }, { timeoutMs, message: () => `plaza (${proc.role}) not ready:\n${proc.output().slice(-4000)}` });
}

/** For `after` hooks: SIGKILL whatever a test started and has not stopped, even on failure. */
export async function killAllPlaza(): Promise<void> {
  await Promise.all([...running].map((proc) => proc.kill('SIGKILL')));
}

export interface PlazaRun {
  /** The exit code; -1 when the process was ended by a signal (the timeout's). */
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `plaza <args>` as a separate process, as a user would, with only PATH and `env` (logs at
 * warn, the operations listener on a free port) and `stdin` (the password of `users add`, say). The
 * timeout ends a process that should have exited but runs on (a server that should have refused to
 * start). Resolves once its output is read.
 */
export function runPlaza(env: Record<string, string>, args: string[], stdin = '', timeoutMs = 120_000): Promise<PlazaRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN_JS, ...args], { env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', METRICS_PORT: '0', ...env }, timeout: timeoutMs });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(stdin);
  });
}
