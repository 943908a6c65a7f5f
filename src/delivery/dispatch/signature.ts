import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): base64 HMAC-SHA256 over
 * `${id}.${timestamp}.${body}`, as `v1,<signature>`. Several keys (a secret rotation) give several
 * signatures, space-separated; a receiver accepts the message when any one verifies.
 */
export function signatureHeader(keys: readonly Buffer[], messageId: string, timestampSeconds: number, body: string | Buffer): string {
  return keys
    .map((key) => {
      const hmac = createHmac('sha256', key);
      hmac.update(`${messageId}.${timestampSeconds}.`);
      hmac.update(body);
      return `v1,${hmac.digest('base64')}`;
    })
    .join(' ');
}

/**
 * The receiver's side: whether one of the `v1,` signatures of a `webhook-signature` header was made
 * with `key` over this message (constant-time comparison). Used by `plaza listen`.
 */
export function signatureMatches(header: string, key: Buffer, messageId: string, timestampSeconds: number, body: string | Buffer): boolean {
  const expected = Buffer.from(signatureHeader([key], messageId, timestampSeconds, body));
  return header.split(' ').some((candidate) => {
    const given = Buffer.from(candidate);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
