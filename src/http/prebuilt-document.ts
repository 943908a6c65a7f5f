import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';

const gzipAsync = promisify(gzip);
const brotliAsync = promisify(brotliCompress);

export type DocumentEncoding = 'br' | 'gzip';

/**
 * A public document that is the same for every request until the next deploy (/openapi.json), served
 * from bytes built once: serialised on the first request, each compressed variant on the first request
 * that accepts it, at the best ratio (paid once, in zlib's thread pool), never per request. A request
 * that fails to build leaves nothing cached, so the next one tries again.
 */
export class PrebuiltDocument {
  private identity?: { body: Buffer; etag: string };
  private readonly variants = new Map<DocumentEncoding, Promise<Buffer>>();

  constructor(private readonly build: () => unknown) {}

  private plain(): { body: Buffer; etag: string } {
    if (!this.identity) {
      const body = Buffer.from(JSON.stringify(this.build()));
      // Weak: the compressed variants carry the same tag (RFC 9110 §8.8.1: same content, other coding).
      this.identity = { body, etag: `W/"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
    }
    return this.identity;
  }

  private variant(encoding: DocumentEncoding): Promise<Buffer> {
    let pending = this.variants.get(encoding);
    if (!pending) {
      const { body } = this.plain();
      pending = encoding === 'br'
        ? brotliAsync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } })
        : gzipAsync(body, { level: constants.Z_BEST_COMPRESSION });
      pending.catch(() => this.variants.delete(encoding));
      this.variants.set(encoding, pending);
    }
    return pending;
  }

  /** Answers the request: 304 for a matching If-None-Match, else the variant the client accepts best. */
  async send(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const { body, etag } = this.plain();
    reply.header('etag', etag).header('vary', 'accept-encoding').header('cache-control', 'public, no-cache');
    if (matches(request.headers['if-none-match'], etag)) return reply.code(304).send();
    reply.type('application/json; charset=utf-8');
    const encoding = acceptedEncoding(request.headers['accept-encoding']);
    if (!encoding) return reply.send(body);
    return reply.header('content-encoding', encoding).send(await this.variant(encoding));
  }
}

/** If-None-Match: a list of tags compared weakly (RFC 9110 §13.1.2), or `*`. */
function matches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  const opaque = etag.replace(/^W\//, '');
  return header.split(',').some((tag) => {
    const trimmed = tag.trim();
    return trimmed === '*' || trimmed.replace(/^W\//, '') === opaque;
  });
}

/** br when the client takes it, else gzip, else none; a coding with q=0 is refused, `*` stands for any other. */
export function acceptedEncoding(header: string | undefined): DocumentEncoding | undefined {
  if (!header) return undefined;
  const weights = new Map<string, number>();
  for (const part of header.toLowerCase().split(',')) {
    const [name, ...parameters] = part.trim().split(';');
    const q = parameters.map((p) => /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(p)?.[1]).find((value) => value !== undefined);
    if (name) weights.set(name.trim() === 'x-gzip' ? 'gzip' : name.trim(), q === undefined ? 1 : Number(q));
  }
  const weight = (name: DocumentEncoding) => weights.get(name) ?? weights.get('*') ?? 0;
  const best = (['br', 'gzip'] as const).filter((name) => weight(name) > 0).sort((a, b) => weight(b) - weight(a));
  return best[0];
}
