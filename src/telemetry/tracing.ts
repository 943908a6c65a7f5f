/**
 * Traces (docs/operations.md, Traces): the one tracer of the process. Until startTracing finds an
 * OTLP endpoint in the environment it is a no-op whose `enabled` is false, and no OpenTelemetry
 * module is loaded: a call site asks `enabled` first and builds no attributes, no span, nothing
 * per request or per delivery. Set, the SDK is loaded with import() (otel-tracer.ts).
 *
 * Contexts are passed by hand, as W3C traceparent strings or as spans, not through an async
 * context: the few spans Plaza makes know their parent, and a delivery's send happens in another
 * process, later, where only the traceparent stored with its event is left.
 */
import type { TraceSpan, Tracer } from './tracer.js';

export type { SpanAttributes, SpanKind, SpanOptions, TraceSpan, Tracer } from './tracer.js';
export { inSpan } from './tracer.js';

const noopSpan: TraceSpan = { traceparent: '', setAttributes: () => {}, fail: () => {}, end: () => {} };

export const noopTracer: Tracer = { enabled: false, startSpan: () => noopSpan, shutdown: async () => {} };

let current: Tracer = noopTracer;

/** The process's tracer: the no-op until startTracing found an endpoint. */
export function activeTracer(): Tracer {
  return current;
}

/**
 * Whether the environment asks for traces: an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, OTEL_SDK_DISABLED is not `true` and OTEL_TRACES_EXPORTER
 * is not `none`.
 */
export function tracingWanted(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

/**
 * Loads the OpenTelemetry SDK and makes it the process's tracer when the environment asks for
 * traces; otherwise loads nothing and keeps the no-op. Called once, at the start of `plaza serve`.
 */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<Tracer> {
  if (!tracingWanted(env) || current.enabled) return current;
  const { createOtelTracer } = await import('./otel-tracer.js');
  current = await createOtelTracer(env);
  return current;
}

/** Stops the tracer (flushing its spans) and goes back to the no-op. */
export async function stopTracing(): Promise<void> {
  const stopping = current;
  current = noopTracer;
  await stopping.shutdown();
}
