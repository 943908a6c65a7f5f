/**
 * The OpenTelemetry SDK behind tracing.ts, loaded with import() only when the environment asks for
 * traces. Spans go in batches to the OTLP/HTTP endpoint of the standard variables
 * (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS,
 * OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_EXPORTER_OTLP_COMPRESSION: read by the exporter itself), encoded
 * as OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL says: http/protobuf (the default) or http/json;
 * OTEL_SERVICE_NAME (default `plaza`) and OTEL_RESOURCE_ATTRIBUTES name the process;
 * OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG choose the sampler, OTEL_BSP_* tune the batches.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Link, type Span } from '@opentelemetry/api';
import { parseTraceParent } from '@opentelemetry/core';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace';
import { packageVersion } from '../paths.js';
import type { SpanKind as PlazaSpanKind, SpanOptions, TraceSpan, Tracer } from './tracer.js';

const KINDS: Record<PlazaSpanKind, SpanKind> = {
  internal: SpanKind.INTERNAL,
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
};

class OtelSpan implements TraceSpan {
  constructor(readonly span: Span) {}

  get traceparent(): string {
    const { traceId, spanId, traceFlags } = this.span.spanContext();
    return `00-${traceId}-${spanId}-${traceFlags.toString(16).padStart(2, '0')}`;
  }

  setAttributes(attributes: Record<string, string | number | boolean>): void {
    this.span.setAttributes(attributes);
  }

  fail(message: string): void {
    this.span.setStatus({ code: SpanStatusCode.ERROR, message });
  }

  end(endTime?: number): void {
    this.span.end(endTime);
  }
}

/** A context whose span is `parent`: ours, or a remote one from a traceparent (ROOT_CONTEXT when it does not parse). */
function parentContext(parent: TraceSpan | string | null | undefined): Context {
  if (parent instanceof OtelSpan) return trace.setSpan(ROOT_CONTEXT, parent.span);
  if (typeof parent !== 'string' || parent === '') return ROOT_CONTEXT;
  const remote = parseTraceParent(parent);
  return remote ? trace.setSpanContext(ROOT_CONTEXT, remote) : ROOT_CONTEXT;
}

function linksOf(traceparents: readonly string[] | undefined): Link[] | undefined {
  if (!traceparents || traceparents.length === 0) return undefined;
  const links: Link[] = [];
  for (const traceparent of traceparents) {
    const context = parseTraceParent(traceparent);
    if (context) links.push({ context });
  }
  return links;
}

/** OTEL_TRACES_SAMPLER (and _ARG) as the specification names them; parentbased_always_on by default. */
export function samplerFrom(env: NodeJS.ProcessEnv): Sampler {
  const name = env.OTEL_TRACES_SAMPLER?.trim().toLowerCase() || 'parentbased_always_on';
  const arg = Number(env.OTEL_TRACES_SAMPLER_ARG);
  const ratio = Number.isFinite(arg) && arg >= 0 && arg <= 1 && env.OTEL_TRACES_SAMPLER_ARG?.trim() ? arg : 1;
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

function positive(value: string | undefined): number | undefined {
  const number = Number(value);
  return value?.trim() && Number.isInteger(number) && number > 0 ? number : undefined;
}

/** The protocols Plaza exports with; grpc is not one (a collector takes OTLP/HTTP on 4318). */
export type ExportProtocol = 'http/protobuf' | 'http/json';

/**
 * OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf (the
 * specification's default). `asked` is set when the variable named one Plaza does not speak (grpc):
 * it exports over http/protobuf, and the start says so.
 */
export function exportProtocol(env: NodeJS.ProcessEnv): { protocol: ExportProtocol; asked?: string } {
  const value = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() || env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() || 'http/protobuf').toLowerCase();
  if (value === 'http/json' || value === 'http/protobuf') return { protocol: value };
  return { protocol: 'http/protobuf', asked: value };
}

async function exporterFor(protocol: ExportProtocol): Promise<SpanExporter> {
  if (protocol === 'http/json') return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter();
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
}

export async function createOtelTracer(env: NodeJS.ProcessEnv): Promise<Tracer & { protocol: ExportProtocol; unsupportedProtocol?: string }> {
  const { protocol, asked } = exportProtocol(env);
  const resource = resourceFromAttributes({ 'service.name': 'plaza', 'service.version': packageVersion }).merge(detectResources({ detectors: [envDetector] }));
  const batches = {
    ...(positive(env.OTEL_BSP_SCHEDULE_DELAY) ? { scheduledDelayMillis: positive(env.OTEL_BSP_SCHEDULE_DELAY)! } : {}),
    ...(positive(env.OTEL_BSP_MAX_QUEUE_SIZE) ? { maxQueueSize: positive(env.OTEL_BSP_MAX_QUEUE_SIZE)! } : {}),
    ...(positive(env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE) ? { maxExportBatchSize: positive(env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE)! } : {}),
    ...(positive(env.OTEL_BSP_EXPORT_TIMEOUT) ? { exportTimeoutMillis: positive(env.OTEL_BSP_EXPORT_TIMEOUT)! } : {}),
  };
  const provider = new TracerProvider({
    resource,
    sampler: samplerFrom(env),
    spanProcessors: [new BatchSpanProcessor({ exporter: await exporterFor(protocol), ...batches })],
  });
  const tracer = provider.getTracer('plaza', packageVersion);
  return {
    enabled: true,
    protocol,
    ...(asked ? { unsupportedProtocol: asked } : {}),
    startSpan(name: string, options: SpanOptions = {}): TraceSpan {
      const links = linksOf(options.links);
      const span = tracer.startSpan(
        name,
        {
          kind: KINDS[options.kind ?? 'internal'],
          ...(options.attributes ? { attributes: options.attributes } : {}),
          ...(links ? { links } : {}),
          ...(options.startTime !== undefined ? { startTime: options.startTime } : {}),
        },
        parentContext(options.parent),
      );
      return new OtelSpan(span);
    },
    shutdown: () => provider.shutdown(),
  };
}
