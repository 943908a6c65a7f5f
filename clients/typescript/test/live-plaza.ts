import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The repository holding this package (clients/typescript/dist/test → four levels up). */
export const repositoryRoot = new URL('../../../../', import.meta.url).pathname;
const plazaBin = join(repositoryRoot, 'bin/plaza.js');

export interface LivePlaza {
  url: string;
  adminKey: string;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * A real Plaza for the live tests: `plaza serve` of this repository (built: dist/ must exist), on
 * PLAZA_CLIENT_DATABASE_URL (an empty database) or, without it, its own embedded PostgreSQL in a
 * temporary DATA_DIR; a small per-tenant event limit, so that a 429 is easy to provoke; an admin
 * API key made with the CLI, as an operator does.
 */
export async function startPlaza(env: Record<string, string> = {}): Promise<LivePlaza> {
  if (!existsSync(join(repositoryRoot, 'dist/src/main.js'))) throw new Error(`build Plaza first (npm run build in ${repositoryRoot})`);
  const dataDir = mkdtempSync(join(tmpdir(), 'plaza-client-live-'));
  const port = await freePort();
  const childEnv: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: String(port),
    METRICS_PORT: '0',
    LOG_FORMAT: 'json',
    LOG_LEVEL: 'warn',
    SECRETS_KEY: randomBytes(32).toString('base64'),
    WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32',
    ...(process.env.PLAZA_CLIENT_DATABASE_URL ? { DATABASE_URL: process.env.PLAZA_CLIENT_DATABASE_URL } : {}),
    ...env,
  };
  const child = spawn(process.execPath, [plazaBin, 'serve'], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const stop = async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await exited(child);
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const url = `http://127.0.0.1:${port}`;
    await until(async () => (await fetch(`${url}/readyz`).catch(() => undefined))?.ok === true, 120_000, () => child.exitCode !== null, () => output);
    const cli = spawnSync(process.execPath, [plazaBin, 'api-keys', 'add', '--name', 'client live tests', '--role', 'admin'], { env: childEnv, encoding: 'utf8' });
    if (cli.status !== 0) throw new Error(`plaza api-keys add failed: ${cli.stderr}`);
    return { url, adminKey: cli.stdout.trim(), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', () => resolve())));
}

export async function until(check: () => Promise<boolean> | boolean, timeoutMs: number, gaveUp: () => boolean = () => false, context: () => string = () => ''): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (gaveUp() || Date.now() > deadline) throw new Error(`gave up waiting${context() ? `:\n${context()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
