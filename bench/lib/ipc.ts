import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { track, untrack } from './processes.js';

/**
 * The harness talks to its helper processes (receivers, load drivers, ceilings) over Node's IPC
 * channel: the parent sends { id, type, payload }, the child answers { id, ok, result | error }.
 */
interface Request {
  id: number;
  type: string;
  payload: unknown;
}

interface Answer {
  id: number;
  ok: boolean;
  result?: unknown;
  error?: string;
}

type Handler = (payload: never) => unknown;

/** Child side: answers requests with the handlers, and exits when the harness goes away. */
export function serveRequests(handlers: Record<string, Handler>): void {
  process.on('message', (message: Request) => {
    const handler = handlers[message.type];
    const reply = (answer: Omit<Answer, 'id'>) => process.send?.({ id: message.id, ...answer });
    if (!handler) {
      reply({ ok: false, error: `unknown request ${message.type}` });
      return;
    }
    Promise.resolve()
      .then(() => handler(message.payload as never))
      .then(
        (result) => reply({ ok: true, result }),
        (error: unknown) => reply({ ok: false, error: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
      );
  });
  // Never outlive the harness: an orphaned receiver or driver would skew the next run.
  process.on('disconnect', () => process.exit(0));
  process.send?.({ id: 0, ok: true, result: 'ready' });
}

/** Parent side: one helper process started from dist/bench/children/<name>.js (or peers/: the senders Plaza is compared with). */
export class Helper {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  private exited = false;

  private constructor(
    readonly name: string,
    private readonly child: ChildProcess,
  ) {
    child.on('message', (answer: Answer) => {
      const waiter = this.pending.get(answer.id);
      if (!waiter) return;
      this.pending.delete(answer.id);
      if (answer.ok) waiter.resolve(answer.result);
      else waiter.reject(new Error(`${name}: ${answer.error}`));
    });
    child.on('exit', (code, signal) => {
      this.exited = true;
      untrack(child);
      for (const waiter of this.pending.values()) waiter.reject(new Error(`${name} exited (${code ?? signal})`));
      this.pending.clear();
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  isRunning(): boolean {
    return !this.exited;
  }

  static async start(name: string, env: Record<string, string> = {}, folder: 'children' | 'peers' = 'children'): Promise<Helper> {
    const file = fileURLToPath(new URL(`../${folder}/${name}.js`, import.meta.url));
    const child = fork(file, [], { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    track(child);
    const helper = new Helper(name, child);
    await new Promise<void>((resolve, reject) => {
      helper.pending.set(0, { resolve: () => resolve(), reject });
      child.once('error', reject);
    });
    return helper;
  }

  request<T>(type: string, payload: unknown = {}): Promise<T> {
    if (this.exited) return Promise.reject(new Error(`${this.name} is not running`));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.child.send({ id, type, payload } satisfies Request);
    });
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }
}

/** Starts a helper, runs one request, stops it. */
export async function runHelper<T>(name: string, type: string, payload: unknown, env?: Record<string, string>): Promise<T> {
  const helper = await Helper.start(name, env);
  try {
    return await helper.request<T>(type, payload);
  } finally {
    await helper.stop();
  }
}
