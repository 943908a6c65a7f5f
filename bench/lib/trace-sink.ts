import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * `npm run bench -- --traces`: an OTLP/HTTP endpoint that takes every export and keeps nothing but
 * counts, so that the services' tracing (spans built, batched, encoded and posted) is measured and a
 * collector's own work is not. It runs in the bench's process, on the same cores as the services,
 * as a collector beside Plaza would.
 */
export interface TraceSink {
  readonly url: string;
  exports: number;
  bytes: number;
  close(): Promise<void>;
}

export async function startTraceSink(port = 0): Promise<TraceSink> {
  const sink = { url: '', exports: 0, bytes: 0, close: async () => {} };
  const server: Server = createServer((request, response) => {
    request.on('data', (chunk: Buffer) => (sink.bytes += chunk.length));
    request.on('end', () => {
      sink.exports += 1;
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  sink.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  sink.close = () => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return sink;
}
