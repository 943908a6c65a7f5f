import { parseArgs } from 'node:util';
import { ConfigError } from '../config.js';
import { EmbeddedUnavailableError } from '../db/embedded/binaries.js';
import { EmbeddedServerBusyError } from '../db/embedded/server.js';
import { AppError } from '../http/errors.js';
import { packageVersion } from '../paths.js';
import { describeStartupError } from '../startup-errors.js';
import { usageOf, type CliContext, type Command, type Input } from './command.js';
import { COMMANDS } from './commands.js';
import { UsageError } from './usage-error.js';

const FOOTER = `Run \`plaza help <command>\` or \`plaza <command> --help\` for one command's usage.
The database is DATABASE_URL, or the embedded PostgreSQL server in DATA_DIR: the CLI uses the one a
running plaza serve owns, or starts it for the duration of the command.`;

export function generalUsage(commands: Command[] = COMMANDS): string {
  const width = Math.max(...commands.map((command) => command.name.length));
  const lines = commands.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`);
  return `Usage: plaza <command> [options]\n\n${lines.join('\n')}\n  ${'help <command>'.padEnd(width)}  Show the usage of a command\n\nplaza --version prints the version.\n${FOOTER}`;
}

export function commandUsage(command: Command): string {
  return `Usage: ${usageOf(command)}\n\n${command.summary}.${command.details ? `\n\n${command.details}` : ''}`;
}

/** The command named by the first one or two words, and the arguments after them. */
function findCommand(argv: string[], commands: Command[]): { command?: Command; rest: string[] } {
  for (const words of [2, 1]) {
    const name = argv.slice(0, words).join(' ');
    const command = commands.find((c) => c.name === name);
    if (command) return { command, rest: argv.slice(words) };
  }
  return { rest: argv };
}

/** How many bare arguments a usage line takes: `<username> true|false` is two, option values do not count. */
function positionalCount(command: Command): number {
  let count = 0;
  let skipValue = false;
  for (const token of command.args.split(' ').filter(Boolean)) {
    if (skipValue) skipValue = false;
    else if (/^\[?--/.test(token)) skipValue = !/\]$/.test(token) && command.options?.[token.replace(/^\[?--|\]$/g, '')]?.type === 'string';
    else if (!token.startsWith('[')) count++;
  }
  return count;
}

function parse(command: Command, args: string[]): Input {
  let parsed;
  try {
    parsed = parseArgs({ args, options: command.options ?? {}, allowPositionals: true, strict: true, tokens: true });
  } catch (error) {
    // Node's own message goes on about `--` and positionals (or over lines); its first sentence is
    // the point, and for a value starting with a dash, how to write it.
    const message = (error as Error).message;
    const first = `${message.split(/\.(?: |\n)/)[0]!.replace(/\.$/, '')}.`;
    const ambiguous = /^Option '(--[\w-]+)[^']*' argument is ambiguous/.exec(message);
    throw new UsageError(ambiguous ? `${first} A value that starts with a dash is written ${ambiguous[1]}=<value>.` : first, true);
  }
  // parseArgs keeps the last of an option given twice: `--seller 42 --seller 43` would act on 43 unsaid.
  const given = (parsed.tokens ?? []).filter((token) => token.kind === 'option').map((token) => token.name);
  const twice = given.find((name, i) => given.indexOf(name) !== i && !command.options?.[name]?.multiple);
  if (twice) throw new UsageError(`--${twice} is given twice.`, true);
  if (parsed.positionals.length > positionalCount(command)) throw new UsageError(`Unexpected argument "${parsed.positionals[positionalCount(command)]}".`, true);
  return { positionals: parsed.positionals, values: parsed.values as Input['values'], args };
}

const isHelpFlag = (arg: string) => arg === '--help' || arg === '-h';

const wantsHelp = (args: string[]) => {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some(isHelpFlag);
};

/**
 * Runs `plaza <argv>` and returns the exit code: 0 done, 2 a mistake of the caller (printed
 * without a stack trace), 1 anything else. Help and version never touch the configuration or the
 * database, and arguments are validated before a command may open the database.
 */
export async function runCli(argv: string[], ctx: CliContext, commands: Command[] = COMMANDS): Promise<number> {
  const [first, ...others] = argv;
  if (first === undefined || first === '--help' || first === '-h' || (first === 'help' && (others.length === 0 || (others.length === 1 && others[0] === 'help')))) {
    ctx.out(generalUsage(commands));
    return 0;
  }
  if (first === '--version' || first === '-v' || first === 'version') {
    if (others.length === 1 && isHelpFlag(others[0]!)) {
      ctx.out('Usage: plaza --version\n\nPrints the version.');
      return 0;
    }
    if (others.length > 0) {
      ctx.err(`plaza: ${first} takes no argument.`);
      return 2;
    }
    ctx.out(packageVersion);
    return 0;
  }
  const asksHelp = first === 'help';
  const { command, rest } = findCommand(asksHelp ? others : argv, commands);
  try {
    if (!command) {
      const named = asksHelp ? others : argv;
      const group = commands.filter((c) => c.name.split(' ')[0] === named[0]);
      const groupUsage = group.map((c) => `  ${usageOf(c)}`).join('\n');
      // `plaza keys --help`, `plaza help keys`: the usage of every command of the group.
      const groupHelp = asksHelp ? named.length === 1 : named.length > 1 && named.slice(1).every(isHelpFlag);
      if (group.length > 0 && groupHelp) {
        ctx.out(`Usage:\n${groupUsage}\n\nRun \`plaza help <command>\` for one command's usage.`);
        return 0;
      }
      if (group.length > 0 && named.length === 1) {
        ctx.err(`plaza: "${named[0]}" needs one of its commands:\n\n${groupUsage}`);
        return 2;
      }
      const hint = group.length > 0 ? `\n\n${groupUsage}` : `\n\n${generalUsage(commands)}`;
      ctx.err(`plaza: Unknown command "${named.slice(0, 2).join(' ')}".${hint}`);
      return 2;
    }
    if (asksHelp || wantsHelp(rest)) {
      ctx.out(commandUsage(command));
      return 0;
    }
    await command.run(parse(command, rest), ctx);
    return 0;
  } catch (error) {
    const message = mistakeOf(error);
    if (message === undefined) throw error;
    ctx.err(`plaza: ${message}`);
    if (error instanceof UsageError && error.showUsage && command) ctx.err(`\n${commandUsage(command)}`);
    return 2;
  }
}

/** The message of an error the caller can fix, or undefined for a real failure. */
function mistakeOf(error: unknown): string | undefined {
  if (error instanceof UsageError || error instanceof ConfigError || error instanceof EmbeddedServerBusyError || error instanceof EmbeddedUnavailableError) return error.message;
  if (error instanceof AppError && error.status < 500) return error.detail;
  // A database that cannot be reached, a port in use: one line naming the cause (startup-errors.ts).
  return describeStartupError(error);
}
