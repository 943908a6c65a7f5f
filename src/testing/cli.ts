import { Readable } from 'node:stream';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { CliContext } from '../cli/command.js';
import { runCli } from '../cli/run.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  /** Whether the command asked for the database (it must not, for help and mistakes). */
  openedDatabase: boolean;
}

/** Runs `plaza <args>` in-process on the given database (undefined: asking for one fails the run). */
export async function runInProcess(args: string[], options: { db?: Database; config?: Config; stdin?: string; now?: Date } = {}): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  let openedDatabase = false;
  const ctx: CliContext = {
    config: () => {
      if (!options.config) throw new Error('this run has no configuration');
      return options.config;
    },
    database: async () => {
      openedDatabase = true;
      if (!options.db) throw new Error('this run has no database');
      return options.db;
    },
    stdin: Readable.from([options.stdin ?? '']),
    out: (text) => void (stdout += `${text}\n`),
    err: (text) => void (stderr += `${text}\n`),
    now: () => options.now ?? new Date(),
  };
  const code = await runCli(args, ctx);
  return { code, stdout, stderr, openedDatabase };
}
