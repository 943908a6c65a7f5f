import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { notificationHeaders } from '../delivery/dispatch/sender.js';
import { signatureHeader } from '../delivery/dispatch/signature.js';
import { exportProtocol } from './otel-tracer.js';
import { activeTracer, noopTracer, startTracing, tracingWanted } from './tracing.js';

describe('the tracer facade', () => {
  test('traces only with an OTLP endpoint, and never with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none', () => {
    assert.equal(tracingWanted({}), false);
    assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' }), false);
    assert.equal(tracingWanted({ OTEL_SERVICE_NAME: 'plaza', OTEL_TRACES_SAMPLER: 'always_on' }), false, 'other variables alone turn nothing on');
    assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true);
    assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }), true);
    assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'TRUE' }), false);
    assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'false' }), true);
    assert.equal(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }), false);
  });

  test('spans are encoded as OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL says, http/protobuf by default; grpc falls back to it, named', () => {
    assert.deepEqual(exportProtocol({}), { protocol: 'http/protobuf' });
    assert.deepEqual(exportProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }), { protocol: 'http/json' });
    assert.deepEqual(exportProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' }), { protocol: 'http/protobuf' });
    assert.deepEqual(exportProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), { protocol: 'http/protobuf', asked: 'grpc' });
  });

  test('without an endpoint startTracing keeps the no-op, whose spans are one shared object', async () => {
    assert.equal(await startTracing({}), noopTracer);
    assert.equal(activeTracer().enabled, false);
    const span = activeTracer().startSpan('x', { attributes: { a: 1 } });
    assert.equal(span, activeTracer().startSpan('y'));
    assert.equal(span.traceparent, '');
  });

  test('a traceparent for the receiver is one more header, outside the signature; none unless asked', () => {
    const notification = { url: 'http://127.0.0.1/hook', messageId: 'msg_1', body: '{"a":1}', keys: [Buffer.alloc(32, 1)], headers: { traceparent: 'mine', 'x-shop': 'a' }, timestampSeconds: 1_700_000_000 };
    const plain = notificationHeaders(notification);
    assert.equal(plain.traceparent, 'mine', "the webhook's own header when the option is off");
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const traced = notificationHeaders({ ...notification, traceparent });
    assert.equal(traced.traceparent, traceparent);
    assert.equal(traced['webhook-signature'], plain['webhook-signature']);
    assert.equal(traced['webhook-signature'], signatureHeader(notification.keys, 'msg_1', 1_700_000_000, '{"a":1}'));
  });
});
