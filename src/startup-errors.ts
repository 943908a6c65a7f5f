import { MigrationMismatchError } from './db/migrate.js';

/**
 * Start-up failures an operator fixes outside Plaza (a database name, a password, a port): one line
 * naming the cause instead of a stack trace. Returns undefined for anything else, which stays a
 * stack trace because it is a bug to report.
 */
export function describeStartupError(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  if (error instanceof ListenError) return describeListenError(error);
  // An applied migration's file changed or its number was reused: the message names the file.
  if (error instanceof MigrationMismatchError) return error.message;
  // pg's own wording when DATABASE_URL asks for TLS (sslmode=require) and the server has none.
  if (/does not support SSL connections/.test(error.message)) return 'the database server in DATABASE_URL does not accept TLS connections, which the URL requires (sslmode); enable TLS on the server or change sslmode';
  // A wrapper without a code of its own (DatabaseUnavailableError): the cause says what happened.
  if ((error as { code?: unknown }).code === undefined && error.cause instanceof Error) return describeStartupError(error.cause);
  const e = error as Error & { code?: string; address?: string; port?: number; syscall?: string };
  switch (e.code) {
    // PostgreSQL SQLSTATEs the server answers at connect time.
    case '3D000':
      return `the database in DATABASE_URL does not exist (${e.message}); create it (createdb) or fix the URL`;
    case '28P01':
    case '28000':
      return `the database refused the login in DATABASE_URL (${e.message})`;
    // Socket errors of the database connection (those of a listen are ListenErrors).
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot resolve the database host of DATABASE_URL (${e.code} ${(e as { hostname?: string }).hostname ?? ''})`.replace(/ \)$/, ')');
    case 'ECONNREFUSED':
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
      return `cannot reach the database in DATABASE_URL (${e.code}${e.address ? ` ${e.address}:${e.port}` : ''}); is PostgreSQL running there?`;
  }
  return undefined;
}

/** A listen that failed, with the settings that chose its address: the message names those. */
export class ListenError extends Error {
  constructor(
    readonly hostSetting: string,
    readonly portSetting: string,
    cause: Error,
  ) {
    super(cause.message, { cause });
  }
}

/** Runs a listen; a failure becomes a ListenError naming `hostSetting` and `portSetting` (HOST and PORT, --host and --port). */
export async function listenNamed<T>(hostSetting: string, portSetting: string, listen: () => Promise<T>): Promise<T> {
  try {
    return await listen();
  } catch (error) {
    throw error instanceof Error ? new ListenError(hostSetting, portSetting, error) : error;
  }
}

function describeListenError({ hostSetting, portSetting, cause }: ListenError): string | undefined {
  const e = cause as Error & { code?: string; address?: string; port?: number; hostname?: string };
  switch (e.code) {
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot resolve the address to listen on (${e.code} ${e.hostname ?? ''}); check ${hostSetting}`.replace(/ \)/, ')');
    case 'EADDRINUSE':
      return `cannot listen on ${e.address ?? ''}:${e.port ?? ''}: the port is already in use (set ${portSetting} to a free one)`;
    case 'EACCES':
      return `cannot listen on ${e.address ?? ''}:${e.port ?? ''}: permission denied (ports below 1024 need privileges)`;
    case 'EADDRNOTAVAIL':
      return `cannot listen on ${e.address ?? ''}: no such local address (check ${hostSetting})`;
  }
  return undefined;
}
