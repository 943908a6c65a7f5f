import type { Queryable } from '../db/database.js';

/** The portal form's filter field: JSON text of an object, or empty for none. */
export function parseFilterText(text: string): { filter: Record<string, unknown> | null } | { error: string } {
  if (text.trim() === '') return { filter: null };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { error: 'must be JSON (an object), or empty for no filter' };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { error: 'must be a JSON object, or empty for no filter' };
  return { filter: value as Record<string, unknown> };
}

/**
 * The body of the newest notification this webhook got (through its deliveries: only what it was
 * sent, never another tenant's events), for testing a filter in the portal; undefined when none is kept.
 */
export async function latestNotification(db: Queryable, webhookId: number): Promise<{ eventId: string; topicPath: string; body: unknown } | undefined> {
  const { rows } = await db.query<{ event_id: string; body: { topic_path?: string } }>(
    `SELECT e.event_id, e.body FROM deliveries d JOIN events e ON e.id = d.event_id
      WHERE d.webhook_id = $1 AND e.body IS NOT NULL
      ORDER BY d.id DESC LIMIT 1`,
    [webhookId],
  );
  const row = rows[0];
  return row && { eventId: row.event_id, topicPath: String(row.body.topic_path ?? ''), body: row.body };
}
