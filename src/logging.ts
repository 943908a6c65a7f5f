import pino, { type DestinationStream, type Logger } from 'pino';
import { createRequire } from 'node:module';
import type { Config } from './config.js';
import { looksSecret } from './secret-names.js';

// Secrets never reach the logs, whatever a log line carries.
const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  '*.password',
  '*.current_password',
  '*.new_password',
  '*.key',
  '*.refresh_token',
  '*.token',
  '*.secret',
  '*.headers.authorization',
  // A database error's detail can quote the row it refused ("Failing row contains (…)", "Key (…)=(…)"):
  // a password hash, a key's hash. The message and the SQLSTATE code say what went wrong.
  'err.detail',
];

/** Percent-decoded, as the router reads it (`/portal/%6cink/…` is `/portal/link/…`); as is when malformed. */
function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * A URL as it may be logged: the one-time token of a portal link (`/portal/link/<token>`, which a
 * browser GETs before it signs in with it) and credential-like query values replaced, however the
 * URL spells them. Anyone who reads the log within a link's 15 minutes could otherwise sign in as
 * its seller.
 */
export function loggableUrl(url: string): string {
  const at = url.indexOf('?');
  const rawPath = at === -1 ? url : url.slice(0, at);
  const path = /^\/+portal\/+link\//i.test(decoded(rawPath)) ? '/portal/link/[redacted]' : rawPath;
  if (at === -1) return path;
  const query = url.slice(at + 1).split('&').map((pair) => {
    const name = pair.split('=', 1)[0]!;
    // Credentials someone put in a URL (`?access_token=…`, `?x-api-key=…`).
    return looksSecret(decoded(name)) ? `${name}=[redacted]` : pair;
  });
  return `${path}?${query.join('&')}`;
}

/** Fastify's request fields, with the URL made loggable: used for every `req` a line carries. */
export const LOG_SERIALIZERS = {
  req: (request: { method?: string; url?: string; host?: string; ip?: string; socket?: { remotePort?: number } }) => ({
    method: request.method,
    url: request.url === undefined ? undefined : loggableUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  }),
};

export interface LogOutput {
  /** Where lines go; standard output by default. */
  stream?: DestinationStream;
  /** Whether that output is a terminal (decides LOG_FORMAT=auto); process.stdout's by default. */
  isTTY?: boolean;
}

/** Whether the lines are for people (pino-pretty) or for machines (JSON). */
export function choosePrettyLogs(format: Config['LOG_FORMAT'], isTTY: boolean): boolean {
  return format === 'pretty' || (format === 'auto' && isTTY);
}

/**
 * The process logger: ISO-8601 times (people and log collectors both read them without
 * conversion), secrets redacted, JSON lines unless a person is watching or asked for pretty lines.
 */
export function createLogger(config: Pick<Config, 'LOG_LEVEL' | 'LOG_FORMAT'>, output: LogOutput = {}): Logger {
  const options = {
    level: config.LOG_LEVEL,
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    serializers: LOG_SERIALIZERS,
  };
  const isTTY = output.isTTY ?? Boolean(process.stdout.isTTY);
  if (!choosePrettyLogs(config.LOG_FORMAT, isTTY)) return output.stream ? pino(options, output.stream) : pino(options);
  // In-process and synchronous (no transport worker thread): the last lines before an exit are kept.
  // Loaded only for pretty lines: JSON logs (production, the benchmarks) never pay its ≈80 ms.
  const pinoPretty = createRequire(import.meta.url)('pino-pretty') as typeof import('pino-pretty');
  const pretty = pinoPretty({
    destination: output.stream ?? 1,
    sync: true,
    colorize: isTTY,
    translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l o',
    // A request stays on one line for people too: its fields go into the message.
    ignore: 'pid,hostname,reqId,req,res,responseTime',
    messageFormat: formatForPeople,
  });
  return pino(options, pretty);
}

interface RequestFields {
  reqId?: string;
  req?: { method?: string; url?: string };
  res?: { statusCode?: number };
  responseTime?: number;
}

/** `request GET /v1/x → 200 in 3.2 ms (req 1f0…)`; other messages keep their own text. */
function formatForPeople(log: Record<string, unknown>, messageKey: string): string {
  const { reqId, req, res, responseTime } = log as RequestFields;
  const parts = [String(log[messageKey] ?? '')];
  if (req) parts.push(`${req.method} ${req.url}`);
  if (res) parts.push(`→ ${res.statusCode}`);
  if (responseTime !== undefined) parts.push(`in ${responseTime} ms`);
  if (reqId) parts.push(`(req ${reqId})`);
  return parts.join(' ');
}
