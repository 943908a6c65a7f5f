import type { ParseArgsConfig } from 'node:util';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { isStorableText } from '../http/input-guard.js';
import { idFromText, MAX_INT32 } from '../http/path-params.js';
import { checkCode, checkName } from '../webhooks/webhook-validators.js';
import { checkNewUserName } from '../accounts/user-name.js';
import { passwordLengthProblem } from '../auth/password-bounds.js';
import { UsageError } from './usage-error.js';

/**
 * What a command may use. Everything that touches the outside is here, so that tests run
 * commands in-process with their own database, input and output.
 */
export interface CliContext {
  /** The configuration from the environment (a ConfigError names a bad variable). */
  config(): Config;
  /**
   * The database, opened (and migrated unless told not to) on first use. Commands call it only after their arguments
   * are validated: a typo never opens (or migrates) anything.
   */
  database(options?: { migrate?: boolean }): Promise<Database>;
  stdin: NodeJS.ReadableStream;
  out(text: string): void;
  /** Notes for the person at the terminal (standard error), kept apart from the output a script reads. */
  err(text: string): void;
  now(): Date;
}

export type Options = NonNullable<ParseArgsConfig['options']>;

export interface Input {
  positionals: string[];
  values: Record<string, string | boolean | undefined>;
  /** The arguments after the command's name, as given. */
  args: string[];
}

/** One CLI command: its words, its usage line, its options, and what it does. */
export interface Command {
  /** The words that select it: `users add`. */
  name: string;
  /** What follows the name in the usage line: `<username> [--seller <id>]`. */
  args: string;
  summary: string;
  options?: Options;
  /** Longer help, printed by `plaza help <command>`. */
  details?: string;
  run(input: Input, ctx: CliContext): Promise<void>;
}

export const usageOf = (command: Command) => `plaza ${command.name}${command.args ? ` ${command.args}` : ''}`;

export function requireText(value: string | boolean | undefined, name: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`${name} is required.`);
  return value.trim();
}

/** The name of a marketplace, a seller or an API key: the rule the admin API applies (checkName). */
export function requireName(value: string | boolean | undefined, name: string): string {
  const checked = checkName(requireText(value, name));
  if (!checked.ok) throw new UsageError(`${name} ${checked.message}.`);
  return checked.value;
}

/** A new user's name: the rule the admin API applies (checkNewUserName); its canonical form. */
export function requireUserName(value: string | boolean | undefined, name: string): string {
  const checked = checkNewUserName(requireText(value, name));
  if (!checked.ok) throw new UsageError(`${name} ${checked.message}.`);
  return checked.value;
}

/** A marketplace's code: the rule the API applies (checkCode). */
export function requireCode(value: string | boolean | undefined, name = '<code>'): string {
  const checked = checkCode(requireText(value, name));
  if (!checked.ok) throw new UsageError(`${name} ${checked.message}.`);
  return checked.value;
}

/** An id (of a seller, connection or API key): what the admin API takes, 1 to 2147483647 (idFromText). */
export function requireId(value: string | boolean | undefined, name: string): number {
  const id = idFromText(requireText(value, name));
  if (id === undefined) throw new UsageError(`${name} must be a positive integer up to ${MAX_INT32}.`);
  return id;
}

export function optional<T>(value: string | boolean | undefined, parse: (value: string) => T): T | undefined {
  return value === undefined ? undefined : parse(value as string);
}

/** Secrets come from standard input, never from an argument (which `ps` would show). */
export async function readStdin(stdin: NodeJS.ReadableStream, prompt: string): Promise<string> {
  if ((stdin as NodeJS.ReadStream).isTTY) process.stderr.write(`${prompt} (then Enter and Ctrl-D): `);
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

export async function readPassword(stdin: NodeJS.ReadableStream): Promise<string> {
  const password = await readStdin(stdin, 'Password');
  // The bounds, before the database is opened; the strength rule (password-strength.ts) runs in the service.
  const outOfBounds = passwordLengthProblem(password);
  if (outOfBounds) throw new UsageError(`The password (read from standard input) ${outOfBounds}.`);
  // Login refuses such text before it looks at the password: the user could never log in.
  if (!isStorableText(password)) throw new UsageError('The password holds a NUL character, which no login can send.');
  return password;
}

/** Rows as aligned columns with a header: readable, and still easy to cut or awk. */
export function table(header: string[], rows: (string | number | boolean | null | Date)[][]): string {
  const cells = [header, ...rows.map((row) => row.map((cell) => (cell === null ? '-' : cell instanceof Date ? cell.toISOString() : String(cell))))];
  const widths = header.map((_, i) => Math.max(...cells.map((row) => row[i]!.length)));
  return cells.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n');
}

/** Reads every page of a keyset-paginated list. */
export async function readAll<T>(fetch: (after: T | undefined) => Promise<T[]>): Promise<T[]> {
  const all: T[] = [];
  for (;;) {
    const page = await fetch(all.at(-1));
    all.push(...page);
    if (page.length < CLI_PAGE) return all;
  }
}
export const CLI_PAGE = 1000;
