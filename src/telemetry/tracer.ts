/** What a tracer offers the code (tracing.ts): the no-op's and the OpenTelemetry SDK's (otel-tracer.ts). */
export type SpanAttributes = Record<string, string | number | boolean>;

export type SpanKind = 'internal' | 'server' | 'client' | 'producer' | 'consumer';

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: SpanAttributes;
  /** The parent: a span of this process, or a W3C traceparent (an incoming request's). */
  parent?: TraceSpan | string | null;
  /** Spans this one follows from (W3C traceparents): a send links to the intake that made its delivery. */
  links?: readonly string[];
  /** When the span began (epoch milliseconds): a span recorded after the fact. */
  startTime?: number;
}

export interface TraceSpan {
  /** This span's context as a W3C traceparent header value (`00-<trace id>-<span id>-<flags>`). */
  readonly traceparent: string;
  setAttributes(attributes: SpanAttributes): void;
  /** The span's status becomes an error, with this message. */
  fail(message: string): void;
  end(endTime?: number): void;
}

export interface Tracer {
  /** False for the no-op: call sites skip all tracing work. */
  readonly enabled: boolean;
  startSpan(name: string, options?: SpanOptions): TraceSpan;
  /** How spans are encoded (the SDK's tracer): http/protobuf or http/json. */
  readonly protocol?: string;
  /** OTEL_EXPORTER_OTLP_PROTOCOL named one Plaza does not speak (grpc): it exports over http/protobuf instead. */
  readonly unsupportedProtocol?: string;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

/**
 * Runs `work` inside `span`: its result's attributes (`describe`) are set, a throw marks the span
 * failed and goes on, and the span ends either way.
 */
export async function inSpan<T>(span: TraceSpan, work: () => Promise<T>, describe: (result: T) => SpanAttributes): Promise<T> {
  try {
    const result = await work();
    span.setAttributes(describe(result));
    return result;
  } catch (error) {
    span.fail(error instanceof Error ? error.message : String(error));
    throw error;
  } finally {
    span.end();
  }
}
