import { Type } from 'typebox';
import { CODE_PATTERN } from '../http/path-params.js';
import { ACTOR_KINDS, HISTORY_ACTIONS, HISTORY_CHANNELS } from './webhook-history.js';
import type { HistoryRow } from './webhook-history.repository.js';

export const HISTORY_MAX_PAGE_SIZE = 100;
export const HISTORY_DEFAULT_PAGE_SIZE = 50;

const Timestamp = Type.String({ format: 'date-time' });
const NullableString = Type.Union([Type.String(), Type.Null()]);
const FieldValue = Type.Union([Type.String(), Type.Boolean(), Type.Array(Type.String()), Type.Null()], {
  description: 'A safe value of the field: never a secret; for `headers` the header names only (values are receivers\' credentials); for `callback_url` its origin only (paths and queries often carry a receiver\'s token).',
});

export const HistoryQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: HISTORY_MAX_PAGE_SIZE, default: HISTORY_DEFAULT_PAGE_SIZE })),
    cursor: Type.Optional(Type.String({ maxLength: 200, description: 'next_cursor of the previous page.' })),
  },
  { additionalProperties: false },
);

const entryProperties = {
  id: Type.Integer(),
  action: Type.Enum(HISTORY_ACTIONS, { description: 'create, update, pause, resume (a PATCH that sets `active`, the portal\'s buttons, a tenant\'s deactivation or activation), rotate_secret, delete, retry, replay (not a dry run), test.' }),
  created_at: Type.String({ format: 'date-time', description: 'When, by the database\'s clock.' }),
  channel: Type.Enum(HISTORY_CHANNELS, { description: 'Through what: api (/v1), portal (signed in with a password), portal_link (a session opened by a portal link), admin_api (/api/v2/admin), cli.' }),
  actor: Type.Object(
    {
      kind: Type.Enum(ACTOR_KINDS, { description: 'user, api_key, portal_link (user_id and name are then the link\'s maker) or cli.' }),
      role: Type.Union([Type.Enum(['seller', 'marketplace', 'admin']), Type.Null()], { description: 'The role it acted with (a portal link: the role of its session); null for the CLI.' }),
      user_id: Type.Union([Type.Integer(), Type.Null()]),
      api_key_id: Type.Union([Type.Integer(), Type.Null()]),
      portal_link_id: Type.Union([Type.Integer(), Type.Null()], { description: 'A portal link\'s session: the link (the `id` its maker got when making it); null otherwise.' }),
      name: Type.Union([Type.String(), Type.Null()], { description: 'The user\'s or API key\'s name when it acted (kept after it is deleted).' }),
    },
    { additionalProperties: false },
  ),
  changes: Type.Array(
    Type.Object({ field: Type.String(), before: Type.Optional(FieldValue), after: Type.Optional(FieldValue) }, { additionalProperties: false }),
    { description: 'The fields that changed. `secret` (a rotation) never has values; a field left unchanged by an update is not listed.' },
  ),
  detail: Type.Union([
    Type.Object(
      {
        delivery_id: Type.Optional(Type.Integer({ description: 'retry: the delivery sent again.' })),
        matched: Type.Optional(Type.Integer({ description: 'replay: deliveries that matched the filter.' })),
        replayed: Type.Optional(Type.Integer({ description: 'replay: deliveries made pending again.' })),
        statuses: Type.Optional(Type.Array(Type.String(), { description: 'replay: the statuses replayed (succeeded, failed).' })),
        since: Type.Optional(Timestamp),
        until: Type.Optional(Type.Union([Timestamp, Type.Null()])),
        topic: Type.Optional(NullableString),
        entity_id: Type.Optional(NullableString),
        event_id: Type.Optional(NullableString),
        success: Type.Optional(Type.Boolean({ description: 'test: the receiver answered 2xx.' })),
        status_code: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
        error: Type.Optional(NullableString),
        previous_secret_expires_at: Type.Optional(Timestamp),
        disabled_reason: Type.Optional(Type.String({ description: 'A pause or resume by the tenant\'s deactivation or activation: `tenant_deactivated`.' })),
      },
      { additionalProperties: false },
    ),
    Type.Null(),
  ]),
};

const exampleEntry = {
  id: 812,
  action: 'update',
  created_at: '2026-01-01T10:00:00.000Z',
  channel: 'portal_link',
  actor: { kind: 'portal_link', role: 'marketplace', user_id: 7, api_key_id: null, portal_link_id: 31, name: 'mkt-staff' },
  changes: [
    { field: 'callback_url', before: 'https://erp.example.com', after: 'https://erp2.example.com' },
    { field: 'headers', before: ['Authorization'], after: ['Authorization', 'X-Shop'] },
  ],
  detail: null,
};

export const HistoryEntry = Type.Object(entryProperties, { additionalProperties: false });
const nextCursor = Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last page. Also sent as Link rel="next".' });

export const HistoryPage = Type.Object(
  { items: Type.Array(HistoryEntry, { description: 'Newest first.' }), next_cursor: nextCursor },
  { additionalProperties: false, examples: [{ items: [exampleEntry], next_cursor: null }] },
);

export const AdminHistoryQuery = Type.Object(
  {
    marketplace_code: Type.String({ pattern: CODE_PATTERN, description: 'The marketplace of the webhook.' }),
    code: Type.String({ pattern: CODE_PATTERN, description: 'The webhook\'s code: every webhook that had it, every tenant\'s, deleted ones too.' }),
    ...HistoryQuery.properties,
  },
  { additionalProperties: false },
);

export const AdminHistoryEntry = Type.Object(
  {
    ...entryProperties,
    webhook_id: Type.Integer({ description: 'Tells apart webhooks that had the same code (one deleted, then another created).' }),
    webhook_deleted: Type.Boolean(),
    owner: Type.Object({ kind: Type.Enum(['seller', 'marketplace', 'admin']), id: Type.String() }, { additionalProperties: false }),
  },
  { additionalProperties: false },
);

export const AdminHistoryPage = Type.Object(
  { items: Type.Array(AdminHistoryEntry, { description: 'Newest first.' }), next_cursor: nextCursor },
  { additionalProperties: false },
);

/** What the owner sees of a history row. */
export function historyItem(row: HistoryRow) {
  return {
    id: Number(row.id),
    action: row.action,
    created_at: new Date(row.created_at).toISOString(),
    channel: row.channel,
    actor: {
      kind: row.actor_kind,
      role: row.actor_role as 'seller' | 'marketplace' | 'admin' | null,
      user_id: row.actor_user_id,
      api_key_id: row.actor_api_key_id,
      portal_link_id: row.actor_portal_link_id === null ? null : Number(row.actor_portal_link_id),
      name: row.actor_name,
    },
    changes: row.changes,
    detail: row.detail,
  };
}

/** What the admins see: the same, with the webhook's id, owner and whether it is deleted. */
export function adminHistoryItem(row: HistoryRow) {
  return { ...historyItem(row), webhook_id: Number(row.webhook_id), webhook_deleted: row.webhook_deleted ?? false, owner: { kind: row.tenant_kind, id: row.tenant_id } };
}
