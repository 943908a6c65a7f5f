import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as an OTLP/HTTP JSON export carried it, its ids in hex and its attributes flattened. */
export interface CollectedSpan {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  attributes: Record<string, string | number | boolean>;
  links: { traceId: string; spanId: string }[];
  startMs: number;
  endMs: number;
  /** The resource's attributes (service.name…). */
  resource: Record<string, string | number | boolean>;
}

interface AnyValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
}
interface KeyValue {
  key: string;
  value: AnyValue;
}

/** OTLP/JSON writes ids in hex; accept base64 too (the protobuf JSON mapping). */
function hexId(id: string | undefined): string {
  if (!id) return '';
  return /^[0-9a-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex');
}

function flatten(attributes: KeyValue[] | undefined): Record<string, string | number | boolean> {
  const flat: Record<string, string | number | boolean> = {};
  for (const { key, value } of attributes ?? []) {
    if (value.stringValue !== undefined) flat[key] = value.stringValue;
    else if (value.intValue !== undefined) flat[key] = Number(value.intValue);
    else if (value.doubleValue !== undefined) flat[key] = value.doubleValue;
    else if (value.boolValue !== undefined) flat[key] = value.boolValue;
  }
  return flat;
}

const nanosToMs = (nanos: string | number) => Number(BigInt(nanos) / 1_000_000n);

/**
 * An OTLP/HTTP trace receiver for the tests: POST /v1/traces with the JSON encoding (what
 * @opentelemetry/exporter-trace-otlp-http sends), every span kept in `spans`.
 */
export class OtlpCollector {
  readonly spans: CollectedSpan[] = [];
  /** Export requests received, whatever their content. */
  exports = 0;
  private readonly server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/traces') return void response.writeHead(404).end();
      this.exports += 1;
      try {
        this.take(JSON.parse(Buffer.concat(chunks).toString()));
      } catch {
        return void response.writeHead(400).end();
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });

  static async start(port = 0): Promise<OtlpCollector> {
    const collector = new OtlpCollector();
    await new Promise<void>((resolve, reject) => {
      collector.server.once('error', reject);
      collector.server.listen(port, '127.0.0.1', () => resolve());
    });
    return collector;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  named(name: string): CollectedSpan[] {
    return this.spans.filter((span) => span.name === name);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private take(body: { resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: Record<string, unknown>[] }[] }[] }): void {
    for (const resourceSpans of body.resourceSpans ?? []) {
      const resource = flatten(resourceSpans.resource?.attributes);
      for (const scope of resourceSpans.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          this.spans.push({
            name: span.name as string,
            kind: span.kind as number,
            traceId: hexId(span.traceId as string),
            spanId: hexId(span.spanId as string),
            parentSpanId: hexId(span.parentSpanId as string | undefined),
            attributes: flatten(span.attributes as KeyValue[] | undefined),
            links: ((span.links as { traceId: string; spanId: string }[] | undefined) ?? []).map((link) => ({ traceId: hexId(link.traceId), spanId: hexId(link.spanId) })),
            startMs: nanosToMs(span.startTimeUnixNano as string),
            endMs: nanosToMs(span.endTimeUnixNano as string),
            resource,
          });
        }
      }
    }
  }
}
