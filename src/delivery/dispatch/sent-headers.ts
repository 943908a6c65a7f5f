import { looksSecret } from '../../secret-names.js';

/**
 * What an attempt records of the request it sent. The signature headers are kept as they are (a
 * receiver's developer compares them with what their code computed; an HMAC reveals no secret);
 * the webhook's own headers often carry credentials (Authorization, X-Api-Key), so a value whose
 * name looks secret is masked down to a short prefix that still tells which credential was sent.
 */
const NEVER_MASKED = new Set(['webhook-id', 'webhook-timestamp', 'webhook-signature', 'content-type', 'user-agent', 'plaza-entity-sequence']);
const VISIBLE_PREFIX = 4;

export const MASK = '…[masked]';

export function maskValue(value: string): string {
  // Short values would be guessable from a prefix: show none of them.
  return value.length > 3 * VISIBLE_PREFIX ? `${value.slice(0, VISIBLE_PREFIX)}${MASK}` : MASK.slice(1);
}

export function recordedHeaders(sent: Record<string, string> | null): Record<string, string> | null {
  if (!sent) return null;
  const recorded: Record<string, string> = {};
  for (const [name, value] of Object.entries(sent)) {
    recorded[name] = !NEVER_MASKED.has(name) && looksSecret(name) ? maskValue(value) : value;
  }
  return recorded;
}
