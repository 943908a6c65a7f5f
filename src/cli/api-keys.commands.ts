import { CLI_ACTOR } from '../accounts/admin-audit.repository.js';
import { listApiKeys } from '../auth/api-keys.repository.js';
import { createApiKey, revokeApiKeyById } from '../auth/api-keys.service.js';
import type { ApiKeyRow } from '../auth/api-keys.repository.js';
import { CLI_PAGE, optional, readAll, requireCode, requireId, requireName, table, type Command } from './command.js';
import { requireRole } from './users.commands.js';
import { UsageError } from './usage-error.js';

const DURATION = /^([1-9][0-9]{0,5})([dh])$/;

/**
 * `--expires-in 90d` (days) or `12h` (hours) from now, or `--expires-at` an RFC 3339 time; neither:
 * the longest lifetime API_KEY_MAX_LIFETIME_DAYS allows (none when it is 0). The service checks the
 * result against the cap, as for the admin API.
 */
function expiryOption(values: { 'expires-in'?: string | boolean; 'expires-at'?: string | boolean }, now: Date): { expiresAt?: Date; field: string } {
  const inText = values['expires-in'];
  const atText = values['expires-at'];
  if (inText !== undefined && atText !== undefined) throw new UsageError('Give --expires-in or --expires-at, not both.');
  if (typeof inText === 'string') {
    const match = DURATION.exec(inText.trim());
    if (!match) throw new UsageError('--expires-in must be a number of days or hours: 90d, 12h.');
    const unitMs = match[2] === 'd' ? 86_400_000 : 3_600_000;
    return { expiresAt: new Date(now.getTime() + Number(match[1]) * unitMs), field: '--expires-in' };
  }
  if (typeof atText === 'string') {
    const at = new Date(atText.trim());
    if (!/^\d{4}-\d{2}-\d{2}T/.test(atText.trim()) || Number.isNaN(at.getTime())) throw new UsageError('--expires-at must be a date and time such as 2027-01-31T00:00:00Z.');
    return { expiresAt: at, field: '--expires-at' };
  }
  return { field: '--expires-in' };
}

/** Who made a key, for the list: `user 3 (alice)`, `api_key 7 (deploy bot)`, `cli`. */
function creatorText(row: ApiKeyRow): string {
  if (row.created_by_api_key !== null) return `api_key ${row.created_by_api_key}${row.creator_name === null ? '' : ` (${row.creator_name})`}`;
  if (row.created_by_user !== null) return `user ${row.created_by_user}${row.creator_name === null ? ' (deleted)' : ` (${row.creator_name})`}`;
  return row.created_by;
}

/** Machine credentials: the key is printed once, at creation, and stored only as a hash. */
export const apiKeyCommands: Command[] = [
  {
    name: 'api-keys add',
    args: '--name <text> --role admin|marketplace|seller [--marketplace <code>] [--seller <id>] [--expires-in <N>d|<N>h | --expires-at <time>]',
    summary: 'Create an API key and print it (only this once)',
    details: '--marketplace is required with --role marketplace, --seller with --role seller; an admin key takes neither. --expires-in 90d (days) or 12h (hours), or --expires-at 2027-01-31T00:00:00Z: the key is refused from then on; without either it expires after API_KEY_MAX_LIFETIME_DAYS, or never when that is 0. Send the key as Authorization: Bearer <key>.',
    options: { name: { type: 'string' }, role: { type: 'string' }, marketplace: { type: 'string' }, seller: { type: 'string' }, 'expires-in': { type: 'string' }, 'expires-at': { type: 'string' } },
    async run({ values }, ctx) {
      const name = requireName(values.name, '--name');
      if (values.role === undefined) throw new UsageError('--role is required (admin, marketplace or seller).');
      const role = requireRole(values.role);
      if ((role === 'marketplace') !== (values.marketplace !== undefined)) throw new UsageError('--marketplace <code> is required with --role marketplace, and only with it.');
      if ((role === 'seller') !== (values.seller !== undefined)) throw new UsageError('--seller <id> is required with --role seller, and only with it.');
      const now = ctx.now();
      const expiry = expiryOption(values, now);
      const input = { name, role, marketplaceCode: optional(values.marketplace, (v) => requireCode(v, '--marketplace')), sellerId: optional(values.seller, (v) => requireId(v, '--seller')), expiresAt: expiry.expiresAt };
      const { row, key } = await createApiKey(await ctx.database(), input, CLI_ACTOR, now, { maxLifetimeDays: ctx.config().API_KEY_MAX_LIFETIME_DAYS, expiresField: expiry.field });
      const expires = row.expires_at ? `expires ${row.expires_at.toISOString()}` : 'never expires';
      ctx.err(`API key ${row.id} (${row.name}) created; it ${expires}. It is shown only now; store it safely:`);
      ctx.out(key);
    },
  },
  {
    name: 'api-keys list',
    args: '',
    summary: 'List API keys (never the keys themselves)',
    async run(_input, ctx) {
      const db = await ctx.database();
      const rows = await readAll((last: { id: number } | undefined) => listApiKeys(db, { afterId: last?.id ?? 0, limit: CLI_PAGE }));
      ctx.out(table(
        ['ID', 'NAME', 'PREFIX', 'ROLE', 'MARKETPLACE', 'SELLER', 'CREATED', 'CREATED BY', 'LAST USED', 'EXPIRES', 'REVOKED'],
        rows.map((k) => [k.id, k.name, k.key_prefix, k.role, k.marketplace_code, k.seller_id, k.created_at, creatorText(k), k.last_used_at, k.expires_at, k.revoked_at]),
      ));
    },
  },
  {
    name: 'api-keys revoke',
    args: '<id>',
    summary: 'Revoke an API key and the keys it made: every process refuses them from the next request on',
    async run({ positionals }, ctx) {
      const id = requireId(positionals[0], '<id>');
      const { cascaded } = await revokeApiKeyById(await ctx.database(), id, CLI_ACTOR, ctx.now());
      ctx.out(`API key ${id} revoked.${cascaded.length > 0 ? ` Revoked with it, as made by it or by a key it made: ${cascaded.join(', ')}.` : ''}`);
    },
  },
];
