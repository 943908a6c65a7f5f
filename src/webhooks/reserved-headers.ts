/**
 * Request headers a webhook's own headers may not set: the transport's (framing, connection,
 * Expect, proxying) and the ones the service writes itself (content type, user agent, the Standard
 * Webhooks signature headers, plaza-entity-sequence). One list: the API refuses them at
 * create/update and the sender drops them, so what is accepted is what is sent.
 */
const RESERVED_HEADERS = new Set([
  'host', 'content-length', 'content-type', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'expect', 'te', 'trailer',
  'user-agent', 'webhook-id', 'webhook-timestamp', 'webhook-signature', 'plaza-entity-sequence',
]);

/** Whether `name` (any case) is reserved; every `proxy-*` header is. */
export function isReservedHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return RESERVED_HEADERS.has(lower) || lower.startsWith('proxy-');
}
