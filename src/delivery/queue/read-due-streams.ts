import type { Queryable } from '../../db/database.js';

/**
 * A delivery's stream inside its webhook: its seller, the middle part of its entity key
 * (marketplace:seller:entity). Written exactly as in the index deliveries_pending_stream_due
 * (migrations/001_baseline.sql), which every query over streams relies on.
 */
export const STREAM = `split_part(d.entity_key, ':', 2)`;

/**
 * Most streams of one webhook a claim looks at; the next claim continues after them. A webhook's
 * slots (DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK, 10 by default) are handed out over the streams visited,
 * so visiting a few times that many is enough, and bounds the claim's cost on a marketplace webhook
 * with thousands of sellers waiting.
 */
export const STREAMS_PER_CLAIM = 32;

export interface StreamRead {
  webhook_id: number;
  key: string;
  /** Due rows, counted up to the per-webhook limit. */
  due: number;
}

export interface LeaseRead {
  webhook_id: number;
  /** The stream, for the locked webhooks only (null for others: not needed). */
  key: string | null;
  tenant: string;
  leased_by: string;
  n: number;
}

export interface DueStreams {
  /** The locked webhooks that are active, with their owner (`kind:id`). */
  webhooks: { webhook_id: number; tenant: string }[];
  /** The streams visited, in scan order, due or not. */
  streams: StreamRead[];
  /** The live leases of every worker: in-flight rows only, a few hundred at most. */
  leases: LeaseRead[];
}

/**
 * One statement, sent once the claim holds the webhooks' lanes, so that it sees every lease the
 * previous claim of those lanes committed: per locked webhook, its owner (if active) and up to
 * STREAMS_PER_CLAIM streams with waiting rows, after the webhook's cursor and then from the first
 * one up to it (null: the second part is all of them; without it, a cursor past a webhook's last
 * stream left it unserved for good), each with its rows due by `now` (the claim's time,
 * lock-due-webhooks.ts) counted up to `perWebhookLimit`; and the leases of all workers live at
 * `now`, per webhook, tenant and worker, and per stream on the locked webhooks.
 */
export async function readDueStreams(
  db: Queryable,
  options: { now: string; webhookIds: readonly number[]; after: readonly (string | null)[]; perWebhookLimit: number },
): Promise<DueStreams> {
  // The streams by a skip scan of deliveries_pending_stream_due, one probe per stream: the next
  // (webhook, stream) after the last in the index's order, kept while it is still this webhook's (and,
  // in the second part, not past the cursor). A row comparison without `webhook_id =`: with the
  // equality and no column statistics, the planner estimated one row per webhook and sorted all of
  // its rows from deliveries_pending_webhook_due instead, three times per claim (claim-plans.test.ts).
  const { rows } = await db.query<DueStreams>(
    `WITH locked AS (
       SELECT * FROM unnest($2::bigint[], $3::text[]) AS l(webhook_id, after)
     ),
     streams AS (
       SELECT l.webhook_id, s.key, s.depth,
              (SELECT count(*)::int FROM (
                 SELECT 1 FROM deliveries_queue d
                  WHERE d.webhook_id = l.webhook_id AND ${STREAM} = s.key AND d.status = 'pending' AND d.next_attempt_at <= $1::timestamptz
                  LIMIT $4) x) AS due
         FROM locked l
        CROSS JOIN LATERAL (
          WITH RECURSIVE after_cursor(key, depth) AS (
            (SELECT CASE WHEN d.webhook_id = l.webhook_id THEN ${STREAM} END, 1 FROM deliveries_queue d
              WHERE l.after IS NOT NULL AND d.status = 'pending' AND (d.webhook_id, ${STREAM}) > (l.webhook_id, l.after)
              ORDER BY d.webhook_id, ${STREAM} LIMIT 1)
            UNION ALL
            SELECT (SELECT CASE WHEN d.webhook_id = l.webhook_id THEN ${STREAM} END FROM deliveries_queue d
                     WHERE d.status = 'pending' AND (d.webhook_id, ${STREAM}) > (l.webhook_id, k.key)
                     ORDER BY d.webhook_id, ${STREAM} LIMIT 1),
                   k.depth + 1
              FROM after_cursor k WHERE k.key IS NOT NULL AND k.depth < ${STREAMS_PER_CLAIM}
          ),
          up_to_cursor(key, depth) AS (
            (SELECT CASE WHEN d.webhook_id = l.webhook_id AND (l.after IS NULL OR ${STREAM} <= l.after) THEN ${STREAM} END,
                    (SELECT count(key)::int FROM after_cursor) + 1
               FROM deliveries_queue d
              WHERE d.status = 'pending' AND (d.webhook_id, ${STREAM}) >= (l.webhook_id, '')
              ORDER BY d.webhook_id, ${STREAM} LIMIT 1)
            UNION ALL
            SELECT (SELECT CASE WHEN d.webhook_id = l.webhook_id AND (l.after IS NULL OR ${STREAM} <= l.after) THEN ${STREAM} END
                      FROM deliveries_queue d
                     WHERE d.status = 'pending' AND (d.webhook_id, ${STREAM}) > (l.webhook_id, k.key)
                     ORDER BY d.webhook_id, ${STREAM} LIMIT 1),
                   k.depth + 1
              FROM up_to_cursor k WHERE k.key IS NOT NULL AND k.depth < ${STREAMS_PER_CLAIM}
          )
          SELECT key, depth FROM after_cursor WHERE key IS NOT NULL
          UNION ALL
          SELECT key, depth FROM up_to_cursor WHERE key IS NOT NULL AND depth <= ${STREAMS_PER_CLAIM}
        ) s
     ),
     leases AS (
       SELECT d.webhook_id, CASE WHEN d.webhook_id = ANY($2::bigint[]) THEN ${STREAM} END AS key,
              h.tenant_kind || ':' || h.tenant_id AS tenant, d.leased_by, count(*)::int AS n
         FROM deliveries_queue d JOIN webhooks h ON h.id = d.webhook_id
        WHERE d.status = 'delivering' AND d.lease_expires_at > $1::timestamptz
        GROUP BY 1, 2, 3, 4
     )
     SELECT (SELECT coalesce(json_agg(json_build_object('webhook_id', h.id, 'tenant', h.tenant_kind || ':' || h.tenant_id) ORDER BY h.id), '[]')
               FROM webhooks h WHERE h.id = ANY($2::bigint[]) AND h.active) AS webhooks,
            (SELECT coalesce(json_agg(json_build_object('webhook_id', s.webhook_id, 'key', s.key, 'due', s.due) ORDER BY s.webhook_id, s.depth), '[]') FROM streams s) AS streams,
            (SELECT coalesce(json_agg(l), '[]') FROM leases l) AS leases`,
    [options.now, options.webhookIds, options.after, options.perWebhookLimit],
    { prepare: true },
  );
  return rows[0]!;
}

/**
 * The due rows the read saw on the active webhooks it locked; Infinity when it may not have seen
 * them all: a stream's count stops at the per-webhook limit, and a webhook's streams at STREAMS_PER_CLAIM.
 */
export function dueRowsSeen(read: DueStreams, perWebhookLimit: number): number {
  const active = new Set(read.webhooks.map((webhook) => webhook.webhook_id));
  const visited = new Map<number, number>();
  let due = 0;
  for (const stream of read.streams) {
    if (!active.has(stream.webhook_id)) continue;
    const streams = (visited.get(stream.webhook_id) ?? 0) + 1;
    visited.set(stream.webhook_id, streams);
    if (stream.due >= perWebhookLimit || streams >= STREAMS_PER_CLAIM) return Infinity;
    due += stream.due;
  }
  return due;
}

/** Most stream cursors a worker remembers (one per webhook with several streams); forgotten when full. */
const MAX_STREAM_CURSORS = 10_000;

/**
 * Per webhook, where the next claim's scan of its streams starts: after the last stream given a
 * slot when a due stream was left without one; else after the last stream visited when the scan
 * stopped at STREAMS_PER_CLAIM; else (every stream visited) anywhere: the cursor is forgotten.
 * Unchanged when the webhook got no slot (it is at its limit).
 */
export function moveStreamCursors(cursors: Map<number, string>, read: DueStreams, quotas: readonly { webhookId: number; key: string }[]): void {
  if (cursors.size >= MAX_STREAM_CURSORS) cursors.clear();
  const givenKeys = new Map<number, Set<string>>();
  for (const quota of quotas) givenKeys.set(quota.webhookId, (givenKeys.get(quota.webhookId) ?? new Set()).add(quota.key));
  for (const [webhookId, streams] of streamsOf(read)) {
    const given = givenKeys.get(webhookId) ?? new Set<string>();
    if (given.size === 0) continue;
    const lastGiven = streams.findLast((stream) => given.has(stream.key))!;
    const left = streams.some((stream) => stream.due > 0 && !given.has(stream.key));
    const cursor = left ? lastGiven.key : streams.length === STREAMS_PER_CLAIM ? streams.at(-1)!.key : undefined;
    if (cursor === undefined) cursors.delete(webhookId);
    else cursors.set(webhookId, cursor);
  }
}

/** The streams read, per webhook, in scan order (one pass: a claim reads up to 32 per locked webhook). */
export function streamsOf(read: DueStreams): Map<number, StreamRead[]> {
  const byWebhook = new Map<number, StreamRead[]>();
  for (const stream of read.streams) {
    const list = byWebhook.get(stream.webhook_id);
    if (list) list.push(stream);
    else byWebhook.set(stream.webhook_id, [stream]);
  }
  return byWebhook;
}
