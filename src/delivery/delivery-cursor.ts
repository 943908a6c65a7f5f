import type { DeliveryCursor } from './deliveries.repository.js';

/**
 * Opaque to clients: base64url of the last item's created_at (µs) and id. Only a position, no
 * filter: a cursor used with other filters simply continues from that position.
 */
export function encodeCursor(cursor: DeliveryCursor): string {
  return Buffer.from(`${cursor.createdMicros}.${cursor.id}`).toString('base64url');
}

export function decodeCursor(text: string): DeliveryCursor | undefined {
  const match = /^(\d{1,16})\.(\d{1,15})$/.exec(Buffer.from(text, 'base64url').toString('utf8'));
  if (!match) return undefined;
  const createdMicros = Number(match[1]);
  const id = Number(match[2]);
  if (!Number.isSafeInteger(createdMicros) || !Number.isSafeInteger(id)) return undefined;
  return { createdMicros, id };
}
