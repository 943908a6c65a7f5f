import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { systemClock, type Clock } from '../clock.js';
import { signatureMatches } from '../delivery/dispatch/signature.js';
import { secretKeyBytes } from '../webhooks/secret-box.js';
import { UsageError } from './usage-error.js';
import { listenNamed } from '../startup-errors.js';

/** Standard Webhooks receivers refuse timestamps further than this from their clock (replays). */
export const TIMESTAMP_TOLERANCE_SECONDS = 5 * 60;
/** A development receiver has no use for bodies larger than the API accepts. */
const BODY_LIMIT_BYTES = 1_048_576;

export interface ListenOptions {
  port: number;
  host: string;
  /** The webhook's signing secret (`whsec_…`); without it signatures are shown, not checked. */
  secret?: string;
  /** The status every notification is answered with (a 5xx or 429 makes Plaza retry). */
  status: number;
}

export interface Listener {
  port: number;
  close(): Promise<void>;
}

/** `plaza listen`: parses the options, prints each notification until SIGINT or SIGTERM. */
export async function runListenCommand(args: string[]): Promise<void> {
  const options = parseListenOptions(args);
  const listener = await startListener(options, (text) => process.stdout.write(`${text}\n`));
  console.log(
    `Listening on http://${options.host}:${listener.port}/ — answering ${options.status}; ` +
      (options.secret ? 'verifying signatures with the given secret.' : 'not verifying signatures (no --secret).'),
  );
  await new Promise<void>((resolve) => {
    const stop = () => void listener.close().then(resolve);
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

export function parseListenOptions(args: string[]): ListenOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: { port: { type: 'string' }, host: { type: 'string', default: '127.0.0.1' }, secret: { type: 'string' }, status: { type: 'string', default: '200' } },
      strict: true,
    }));
  } catch (error) {
    throw new UsageError((error as Error).message, true);
  }
  if (values.port === undefined) throw new UsageError('listen needs --port <n> (0 picks a free port).', true);
  const port = wholeNumber(values.port);
  if (port === undefined || port > 65535) throw new UsageError(`--port must be a port number from 0 to 65535, not "${values.port}".`);
  const status = wholeNumber(values.status!);
  if (status === undefined || status < 200 || status > 599) throw new UsageError(`--status must be an HTTP status from 200 to 599, not "${values.status}".`);
  if (values.secret !== undefined && !/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(values.secret)) {
    throw new UsageError('--secret must be the webhook\'s signing secret, "whsec_" followed by base64.');
  }
  return { port, host: values.host!, status, ...(values.secret === undefined ? {} : { secret: values.secret }) };
}

function wholeNumber(text: string): number | undefined {
  return /^\d{1,5}$/.test(text) ? Number(text) : undefined;
}

/** The receiver itself, separate from the command so that tests run it in-process. */
export async function startListener(options: ListenOptions, print: (text: string) => void, clock: Clock = systemClock): Promise<Listener> {
  const key = options.secret === undefined ? undefined : secretKeyBytes(options.secret);
  const show = (text: string) => print(withoutControlCharacters(text));
  const server = createServer((request, response) => {
    void readBody(request).then((body) => {
      if (body === undefined) {
        show(`${clock.now().toISOString()} ${request.method} ${request.url}: body over ${BODY_LIMIT_BYTES} bytes, answered 413`);
        response.writeHead(413, { connection: 'close' }).end();
        return;
      }
      show(describeNotification(request, body, key, clock, options.status));
      response.writeHead(options.status, { 'content-type': 'application/json' }).end(JSON.stringify({ status: options.status }));
    });
  });
  await listenNamed('--host', '--port', () =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, options.host, resolve);
    }),
  );
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The whole body, or undefined when it is over the limit. */
async function readBody(request: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > BODY_LIMIT_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function describeNotification(request: IncomingMessage, body: Buffer, key: Buffer | undefined, clock: Clock, status: number): string {
  const header = (name: string) => (typeof request.headers[name] === 'string' ? (request.headers[name] as string) : undefined);
  const id = header('webhook-id');
  const timestamp = header('webhook-timestamp');
  const lines = [
    `${clock.now().toISOString()} ${request.method} ${request.url}`,
    `  webhook-id: ${id ?? '(missing)'}   webhook-timestamp: ${timestamp ?? '(missing)'}`,
    `  signature: ${checkSignature(header('webhook-signature'), id, timestamp, body, key, clock)}`,
    indent(formatBody(body)),
    `  answered ${status}`,
  ];
  return lines.join('\n');
}

/** Whoever can reach the port writes to this terminal: no escape sequences get through. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const withoutControlCharacters = (text: string) => text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '\ufffd');

/** The verdict a Standard Webhooks receiver would reach, in words. */
export function checkSignature(header: string | undefined, id: string | undefined, timestamp: string | undefined, body: Buffer, key: Buffer | undefined, clock: Clock): string {
  if (!header || !id || !timestamp) return 'INVALID: the webhook-id, webhook-timestamp and webhook-signature headers are required';
  if (!key) return 'not checked (start with --secret whsec_… to verify)';
  if (!/^\d{1,12}$/.test(timestamp)) return 'INVALID: webhook-timestamp is not a number of seconds';
  if (!signatureMatches(header, key, id, Number(timestamp), body)) return 'INVALID: no signature matches the given secret';
  const age = Math.round(clock.now().getTime() / 1000) - Number(timestamp);
  if (Math.abs(age) > TIMESTAMP_TOLERANCE_SECONDS) {
    const when = age > 0 ? `${age} s ago` : `${-age} s in the future`;
    return `INVALID: signed ${when}, outside the ${TIMESTAMP_TOLERANCE_SECONDS} s a receiver accepts (replay protection)`;
  }
  return 'verified';
}

function formatBody(body: Buffer): string {
  const text = body.toString('utf8');
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text || '(empty body)';
  }
}

const indent = (text: string) => text.replace(/^/gm, '  ');
