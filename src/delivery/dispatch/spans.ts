import type { ClaimedDelivery } from '../queue/take-rows.js';
import type { TraceSpan, Tracer } from '../../telemetry/tracing.js';
import type { SendResult } from './sender.js';

/** Most intake links one claim span carries (a claim takes up to DELIVERY_CONCURRENCY rows). */
const MAX_CLAIM_LINKS = 32;

/**
 * The span of a claim that took deliveries (docs/operations.md, Traces), recorded once it is over
 * (from `startedAt`, epoch ms): a claim that takes nothing makes none. It begins a trace of the
 * worker's (the sends are its children) and links to the intakes of what it took.
 */
export function startClaimSpan(tracer: Tracer, workerId: string, offered: number, deliveries: readonly ClaimedDelivery[], startedAt: number): TraceSpan {
  const links: string[] = [];
  for (const delivery of deliveries) {
    if (links.length >= MAX_CLAIM_LINKS) break;
    if (delivery.trace_context) links.push(delivery.trace_context);
  }
  return tracer.startSpan('plaza.claim', {
    kind: 'consumer',
    startTime: startedAt,
    links,
    attributes: { 'plaza.worker.id': workerId, 'plaza.claim.offered': offered, 'plaza.claim.taken': deliveries.length },
  });
}

/** The callback's host and port, as the span names the server; nothing for a URL that does not parse. */
function server(url: string): Record<string, string | number> {
  try {
    const parsed = new URL(url);
    const port = parsed.port ? Number(parsed.port) : parsed.protocol === 'https:' ? 443 : 80;
    // Only the host and port: a callback's path and query often carry the receiver's token.
    return { 'server.address': parsed.hostname, 'server.port': port, 'url.scheme': parsed.protocol.replace(':', '') };
  } catch {
    return {};
  }
}

/**
 * The span of one attempt to send a delivery: a child of the claim that took it, linked to the
 * intake that created it (the trace context stored with its event), since the send happens in
 * another trace, often in another process, later. Its duration is the send's.
 */
export function sendSpan(tracer: Tracer, delivery: ClaimedDelivery, claim: TraceSpan | undefined): TraceSpan {
  return tracer.startSpan('plaza.send', {
    kind: 'client',
    parent: claim ?? null,
    ...(delivery.trace_context ? { links: [delivery.trace_context] } : {}),
    attributes: {
      'http.request.method': 'POST',
      ...server(delivery.callback_url),
      'plaza.delivery.id': Number(delivery.id),
      'plaza.webhook.id': Number(delivery.webhook_id),
      'plaza.delivery.attempt': delivery.attempts + 1,
      'plaza.message.id': delivery.message_id,
    },
  });
}

export function endSendSpan(span: TraceSpan, send: SendResult): void {
  if (send.statusCode !== null) span.setAttributes({ 'http.response.status_code': send.statusCode });
  if (send.error !== null) {
    span.setAttributes({ 'error.type': send.error });
    span.fail(send.error);
  } else if (send.statusCode !== null && (send.statusCode < 200 || send.statusCode >= 300)) {
    span.setAttributes({ 'error.type': String(send.statusCode) });
    span.fail(`HTTP ${send.statusCode}`);
  }
  span.end();
}
