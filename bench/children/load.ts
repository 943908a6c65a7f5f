import autocannon, { type AutocannonRequest, type Result } from 'autocannon';
import { serveRequests } from '../lib/ipc.js';

/**
 * The HTTP load driver: autocannon in its own process, so that the load generator's CPU is not
 * charged to the service. Each job runs once to warm up (JIT, pools, caches), then once measured.
 */
export interface LoadResult {
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Requests answered 2xx over the warm-up and the measurement: the unit of a CPU figure metered over both. */
  answered: number;
}

interface Common {
  url: string;
  connections: number;
  warmupMs: number;
  durationMs: number;
}

async function measure(job: Common, requests: () => AutocannonRequest[]): Promise<LoadResult> {
  const run = (durationMs: number) =>
    autocannon({ url: job.url, connections: job.connections, duration: Math.max(1, Math.round(durationMs / 1000)), timeout: 10, requests: requests() });
  const warmup = check(await run(job.warmupMs), 'warm-up');
  const result = check(await run(job.durationMs), 'measurement');
  return { perSecond: result['2xx'] / result.duration, p50Ms: result.latency.p50, p99Ms: result.latency.p99, answered: warmup['2xx'] + result['2xx'] };
}

/** A run with failed requests measured something other than the scenario: the scenario is broken. */
function check(result: Result, phase: string): Result {
  if (result.non2xx > 0 || result.errors > 0 || result['2xx'] === 0) {
    const codes = Object.entries(result.statusCodeStats).map(([code, { count }]) => `${code}×${count}`).join(', ');
    throw new Error(`${phase}: ${result['2xx']} ok, ${result.non2xx} non-2xx (${codes}), ${result.errors} errors, ${result.timeouts} timeouts`);
  }
  return result;
}

serveRequests({
  get: (job: Common & { headers: Record<string, string> }) => measure(job, () => [{ method: 'GET', headers: job.headers }]),

  /** Logins with correct passwords, cycling through the users. */
  login: (job: Common & { users: { username: string; password: string }[] }) => {
    let next = 0;
    return measure(job, () => [
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        setupRequest: (request) => {
          const user = job.users[next++ % job.users.length]!;
          return { ...request, body: JSON.stringify({ username: user.username, password: user.password }) };
        },
      },
    ]);
  },

  /**
   * Refresh chains: a chain is taken from the free list for one request and given back with its
   * successor token, so no two connections ever present the same token (that would be reuse).
   */
  refresh: (job: Common & { tokens: string[] }) => {
    const tokens = [...job.tokens];
    const free = tokens.map((_, index) => index);
    return measure(job, () => [
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        setupRequest: (request, context) => {
          const chain = free.shift();
          if (chain === undefined) throw new Error('more connections than refresh chains');
          context.chain = chain;
          return { ...request, body: JSON.stringify({ refresh_token: tokens[chain] }) };
        },
        onResponse: (status, body, context) => {
          const chain = context.chain as number;
          if (status === 200) tokens[chain] = (JSON.parse(body) as { refresh_token: string }).refresh_token;
          free.push(chain);
        },
      },
    ]);
  },
});
