import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { signatureMatches } from '../delivery/dispatch/signature.js';
import { secretKeyBytes } from '../keys/secret-box.js';
import { projectRoot } from '../paths.js';
import { STRONG_PASSWORD } from '../testing/fixtures.js';
import { OtlpCollector, type CollectedSpan } from '../testing/otlp-collector.js';
import { call, createWebhook, login, orderEvent, seedTenant } from '../testing/plaza-api.js';
import { killAllPlaza, sharedKeyEnv, startPlaza } from '../testing/plaza-process.js';
import { Receiver } from '../testing/receiver.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';
import { waitFor } from '../testing/wait.js';

const RECORDER = join(projectRoot, 'dist/src/testing/module-recorder.js');

// A producer's trace that the event request carries in: the request's span goes on from it.
const PRODUCER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PRODUCER_SPAN = '00f067aa0ba902b7';

const SDK_MODULE = /\/node_modules\/@opentelemetry\/(?!api\/)/;

/**
 * Traces end to end (docs/operations.md, Traces): a `plaza serve` process exporting over OTLP/HTTP to
 * a collector of the test, one event from its request to its send; and, without the variables, a
 * process that loads no OpenTelemetry SDK module at all.
 */
describe('OpenTelemetry traces', () => {
  let db: TestDatabase;
  let collector: OtlpCollector;
  let receiver: Receiver;
  let env: Record<string, string>;
  const dir = mkdtempSync(join(tmpdir(), 'plaza-traces-'));

  before(async () => {
    db = await createTestDatabase();
    await seedTenant(db, { sellerId: 1, marketplaceCode: 'MKT', role: 'admin', username: 'alice' });
    collector = await OtlpCollector.start();
    receiver = await Receiver.start();
    env = { DATABASE_URL: db.url, ...sharedKeyEnv(), NODE_OPTIONS: `--import=${RECORDER}` };
  });
  after(async () => {
    await killAllPlaza();
    await receiver?.close();
    await collector?.close();
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('one event: request → intake, claim → send (linked to the intake, traceparent sent) and the completion linked to the send', { timeout: 120_000 }, async () => {
    const modules = join(dir, 'traced.txt');
    const plaza = await startPlaza(
      {
        ...env,
        PLAZA_MODULES_FILE: modules,
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        // The collector of the test reads JSON (the default is http/protobuf).
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'plaza-under-test',
        OTEL_BSP_SCHEDULE_DELAY: '100',
      },
    );
    const { token } = await login(plaza.url, 'alice', STRONG_PASSWORD);
    const hook = await createWebhook(plaza.url, token, 'MKT', { code: 'traced', topic: 'order/update', callback_url: receiver.url(), send_traceparent: true });
    assert.equal((hook.json as { send_traceparent: boolean }).send_traceparent, true);
    const secret = (hook.json as { secret: string }).secret;

    const sent = await call(plaza.url, 'POST', '/v1/MKT/events', {
      token,
      body: orderEvent(1, 'ORD-1', 1),
      headers: { traceparent: `00-${PRODUCER_TRACE}-${PRODUCER_SPAN}-01` },
    });
    assert.equal(sent.status, 202, sent.text);
    await receiver.waitFor(1);
    await waitFor(() => collector.named('plaza.complete').length > 0 && collector.named('POST /v1/:marketplace_code/events').length > 0, {
      timeoutMs: 20_000,
      message: () => `spans so far: ${collector.spans.map((span) => span.name).join(', ')}`,
    });

    const one = (name: string): CollectedSpan => {
      const spans = collector.named(name);
      assert.equal(spans.length, 1, `one ${name} span: ${spans.length}`);
      return spans[0]!;
    };
    const request = one('POST /v1/:marketplace_code/events');
    const intake = one('plaza.intake');
    const claim = one('plaza.claim');
    const send = one('plaza.send');
    const complete = one('plaza.complete');

    // The request goes on from the producer's trace; the intake is its child.
    assert.equal(request.resource['service.name'], 'plaza-under-test');
    assert.equal(request.kind, 2, 'server span');
    assert.equal(request.traceId, PRODUCER_TRACE);
    assert.equal(request.parentSpanId, PRODUCER_SPAN);
    assert.equal(request.attributes['http.route'], '/v1/:marketplace_code/events');
    assert.equal(request.attributes['http.response.status_code'], 202);
    assert.equal(intake.traceId, PRODUCER_TRACE);
    assert.equal(intake.parentSpanId, request.spanId);
    assert.equal(intake.attributes['plaza.deliveries'], 1);
    assert.ok(intake.startMs >= request.startMs && intake.endMs <= request.endMs, 'the intake within its request');

    // The intake's context is stored with the event.
    const { rows } = await db.query<{ trace_context: string }>(`SELECT trace_context FROM events`);
    assert.deepEqual(rows, [{ trace_context: `00-${PRODUCER_TRACE}-${intake.spanId}-01` }]);

    // The worker's trace: the claim, the send its child, linked to the intake.
    const toIntake = { traceId: intake.traceId, spanId: intake.spanId };
    assert.equal(claim.parentSpanId, '');
    assert.deepEqual(claim.links, [toIntake]);
    assert.equal(claim.attributes['plaza.claim.taken'], 1);
    assert.equal(send.traceId, claim.traceId);
    assert.equal(send.parentSpanId, claim.spanId);
    assert.deepEqual(send.links, [toIntake]);
    assert.equal(send.kind, 3, 'client span');
    const { rows: [delivery] } = await db.query<{ id: string; webhook_id: string }>(`SELECT id, webhook_id FROM deliveries`);
    assert.deepEqual(
      {
        host: send.attributes['server.address'],
        port: send.attributes['server.port'],
        status: send.attributes['http.response.status_code'],
        attempt: send.attributes['plaza.delivery.attempt'],
        delivery: send.attributes['plaza.delivery.id'],
        webhook: send.attributes['plaza.webhook.id'],
      },
      { host: '127.0.0.1', port: receiver.port, status: 200, attempt: 1, delivery: Number(delivery!.id), webhook: Number(delivery!.webhook_id) },
    );
    assert.ok(send.endMs >= send.startMs);
    assert.deepEqual(complete.links, [{ traceId: send.traceId, spanId: send.spanId }]);
    assert.equal(complete.attributes['plaza.completion.recorded'], 1);

    // The receiver got the send's context, and the signature still verifies.
    const [received] = receiver.requests;
    assert.equal(received!.headers.traceparent, `00-${send.traceId}-${send.spanId}-01`);
    const headers = received!.headers as Record<string, string>;
    assert.ok(signatureMatches(headers['webhook-signature']!, secretKeyBytes(secret), headers['webhook-id']!, Number(headers['webhook-timestamp']), received!.body));

    assert.equal((await plaza.kill('SIGTERM')).code, 0);
    assert.ok(readFileSync(modules, 'utf8').split('\n').some((url) => SDK_MODULE.test(url)), 'the recorder sees the SDK when it is loaded');
  });

  test('without OTEL_EXPORTER_OTLP_ENDPOINT, or with OTEL_SDK_DISABLED=true, no OpenTelemetry SDK module is loaded', { timeout: 120_000 }, async () => {
    for (const [name, extra] of [['unset', {}], ['disabled', { OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }]] as const) {
      const modules = join(dir, `${name}.txt`);
      const plaza = await startPlaza({ ...env, ...extra, PLAZA_MODULES_FILE: modules });
      const { token } = await login(plaza.url, 'alice', STRONG_PASSWORD);
      assert.equal((await call(plaza.url, 'POST', '/v1/MKT/events', { token, body: orderEvent(1, `ORD-${name}`, 2) })).status, 202);
      assert.equal((await plaza.kill('SIGTERM')).code, 0);
      const loaded = readFileSync(modules, 'utf8').split('\n');
      assert.ok(loaded.some((url) => url.includes('/dist/src/events/accept-event.js')), 'the recorder saw the intake');
      assert.deepEqual(loaded.filter((url) => SDK_MODULE.test(url)), [], name);
    }
    const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM events WHERE entity_id LIKE 'ORD-%' AND entity_id <> 'ORD-1' AND trace_context IS NOT NULL`);
    assert.equal(rows[0]!.n, 0, 'no trace context stored without traces');
  });
});
