import { Transform, type Readable, type TransformCallback } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from './errors.js';

/**
 * Deepest nesting of arrays and objects a JSON body may have (the top-level object is level 1).
 * The contract's deepest body, an event whose payload is an order with items holding prices and
 * attributes, stays under ten levels; 64 leaves room for any real payload a producer passes on.
 * Thousands of levels only serve to make the parser and whatever walks the body next (validation,
 * hashing, serialising) spend time and stack, so they are refused before any of it runs.
 */
export const MAX_JSON_DEPTH = 64;

export const TOO_DEEP = `is nested deeper than ${MAX_JSON_DEPTH} levels`;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACKET = 0x5d;
const CLOSE_BRACE = 0x7d;

/**
 * Counts the nesting of `[` and `{` outside strings in the raw bytes as they arrive, and fails the
 * stream at the first byte past MAX_JSON_DEPTH: the body is refused (400) before it is read whole,
 * let alone parsed. UTF-8 is safe to scan byte by byte: every byte of a multi-byte character is
 * 0x80 or above, so none is mistaken for a quote, a backslash or a bracket. Broken JSON passes
 * through unchanged (the parser refuses it); this only ever refuses depth.
 */
export class JsonDepthScan extends Transform {
  private depth = 0;
  private inString = false;
  private escaped = false;

  override _transform(chunk: Buffer | string, _encoding: BufferEncoding, callback: TransformCallback): void {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    for (let i = 0; i < bytes.length; i++) {
      const byte = bytes[i]!;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (byte === BACKSLASH) this.escaped = true;
        else if (byte === QUOTE) this.inString = false;
      } else if (byte === QUOTE) {
        this.inString = true;
      } else if (byte === OPEN_BRACKET || byte === OPEN_BRACE) {
        if (++this.depth > MAX_JSON_DEPTH) return callback(new AppError('validation_failed', `body ${TOO_DEEP}`, { errors: [{ field: 'body', message: TOO_DEEP }] }));
      } else if (byte === CLOSE_BRACKET || byte === CLOSE_BRACE) {
        this.depth--;
      }
    }
    callback(null, bytes);
  }
}

function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

const JSON_TYPE = /^application\/json\s*(;|$)/i;

/**
 * A preParsing hook for every route. It runs after the route's onRequest hooks (authentication, and
 * the tenant rate limit where a route has one), so neither an anonymous caller nor one past its
 * tenant's limit gets a byte of its body read; and before the body is read and parsed:
 * - a body in a content coding (gzip, br, …) is 415: Plaza reads bodies as sent (identity), and
 *   would otherwise hand the compressed bytes to the JSON parser (400 malformed_json, misleading);
 * - a JSON body is read through JsonDepthScan, so too deep a body is refused while it arrives.
 * The size limit needs nothing here: Fastify refuses a Content-Length over the route's limit before
 * reading, and stops reading a chunked body at the limit.
 */
export async function guardBody(request: FastifyRequest, _reply: FastifyReply, payload: Readable): Promise<Readable> {
  if (!hasBody(request)) return payload;
  const coding = request.headers['content-encoding'];
  if (coding !== undefined && coding.trim().toLowerCase() !== 'identity' && coding.trim() !== '') {
    throw new AppError('unsupported_media_type', `Content-Encoding ${coding.slice(0, 40)} is not accepted; send the body uncompressed.`);
  }
  const type = request.headers['content-type'];
  if (type === undefined || !JSON_TYPE.test(type)) return payload;
  // pipe(), not pipeline(): on a refusal the request must stay open for the 400 to be written.
  const scan = new JsonDepthScan();
  // Fastify listens to the scan only while it reads the body: never for a GET or HEAD, and no more
  // once it has refused a body over the route's limit (413). A depth error raised then, with no
  // listener, is an unhandled 'error' event, which ends the process: one small unauthenticated
  // request stopped the service. While Fastify reads, its own listener gets the error (400).
  scan.on('error', () => {});
  payload.on('error', (error) => scan.destroy(error));
  payload.on('aborted', () => scan.destroy(new Error('The client closed the request while sending its body.')));
  return payload.pipe(scan);
}

export function registerBodyGuard(app: FastifyInstance): void {
  app.addHook('preParsing', guardBody);
}
