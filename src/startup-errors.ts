/**
 * Start-up failures an operator fixes outside Plaza (a database name, a password, a port): one line
 * naming the cause instead of a stack trace. Returns undefined for anything else, which stays a
 * stack trace because it is a bug to report.
 */
export function describeStartupError(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
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
    // Socket errors: the database host, or the port Plaza listens on.
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot resolve the database host of DATABASE_URL (${e.code} ${(e as { hostname?: string }).hostname ?? ''})`.replace(/ \)$/, ')');
    case 'ECONNREFUSED':
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
      return `cannot reach the database in DATABASE_URL (${e.code}${e.address ? ` ${e.address}:${e.port}` : ''}); is PostgreSQL running there?`;
    case 'EADDRINUSE':
      return `cannot listen on ${e.address ?? ''}:${e.port ?? ''}: the port is already in use (set PORT or METRICS_PORT to a free one)`;
    case 'EACCES':
      if (e.syscall === 'listen') return `cannot listen on ${e.address ?? ''}:${e.port ?? ''}: permission denied (ports below 1024 need privileges)`;
      return undefined;
    case 'EADDRNOTAVAIL':
      return `cannot listen on ${e.address ?? ''}: no such local address (check HOST or METRICS_HOST)`;
  }
  return undefined;
}
