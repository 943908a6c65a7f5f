import { constants } from 'node:zlib';
import compress from '@fastify/compress';
import type { FastifyInstance } from 'fastify';

/** Below this a response is sent as is: compressing a few hundred bytes costs more than it saves. */
export const COMPRESSION_THRESHOLD_BYTES = 1024;

/**
 * Compresses responses of textual types (JSON, problem+json, HTML, the metrics text) of at least
 * COMPRESSION_THRESHOLD_BYTES when the client accepts br or gzip (br preferred). Answers are built
 * per request, so the levels are the cheap ones: brotli quality 4 (about gzip's speed, a better
 * ratio) and gzip level 6. /openapi.json does not go through this: its variants are built once at
 * the best ratio (prebuilt-document.ts). Register before the routes: the plugin equips each route
 * as it is added.
 *
 * Request bodies are not decompressed: a body with a Content-Encoding is refused (body-guard.ts).
 */
export async function registerCompression(app: FastifyInstance): Promise<void> {
  await app.register(compress, {
    globalCompression: true,
    globalDecompression: false,
    threshold: COMPRESSION_THRESHOLD_BYTES,
    encodings: ['br', 'gzip'],
    brotliOptions: { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } },
    zlibOptions: { level: 6 },
  });
}
