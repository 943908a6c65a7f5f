import { CLI_ACTOR } from '../admin/admin-audit.repository.js';
import { listApiKeys } from '../auth/api-keys.repository.js';
import { createApiKey, revokeApiKeyById } from '../auth/api-keys.service.js';
import { CLI_PAGE, optional, readAll, requireCode, requireId, requireName, table, type Command } from './command.js';
import { requireRole } from './users.commands.js';
import { UsageError } from './usage-error.js';

/** Machine credentials: the key is printed once, at creation, and stored only as a hash. */
export const apiKeyCommands: Command[] = [
  {
    name: 'api-keys add',
    args: '--name <text> --role admin|marketplace|seller [--marketplace <code>] [--seller <id>]',
    summary: 'Create an API key and print it (only this once)',
    details: '--marketplace is required with --role marketplace, --seller with --role seller; an admin key takes neither. Send the key as Authorization: Bearer <key>.',
    options: { name: { type: 'string' }, role: { type: 'string' }, marketplace: { type: 'string' }, seller: { type: 'string' } },
    async run({ values }, ctx) {
      const name = requireName(values.name, '--name');
      if (values.role === undefined) throw new UsageError('--role is required (admin, marketplace or seller).');
      const role = requireRole(values.role);
      if ((role === 'marketplace') !== (values.marketplace !== undefined)) throw new UsageError('--marketplace <code> is required with --role marketplace, and only with it.');
      if ((role === 'seller') !== (values.seller !== undefined)) throw new UsageError('--seller <id> is required with --role seller, and only with it.');
      const input = { name, role, marketplaceCode: optional(values.marketplace, (v) => requireCode(v, '--marketplace')), sellerId: optional(values.seller, (v) => requireId(v, '--seller')) };
      const { row, key } = await createApiKey(await ctx.database(), input, CLI_ACTOR, ctx.now());
      ctx.err(`API key ${row.id} (${row.name}) created. It is shown only now; store it safely:`);
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
        ['ID', 'NAME', 'PREFIX', 'ROLE', 'MARKETPLACE', 'SELLER', 'CREATED', 'LAST USED', 'REVOKED'],
        rows.map((k) => [k.id, k.name, k.key_prefix, k.role, k.marketplace_code, k.seller_id, k.created_at, k.last_used_at, k.revoked_at]),
      ));
    },
  },
  {
    name: 'api-keys revoke',
    args: '<id>',
    summary: 'Revoke an API key: every process refuses it from the next request on',
    async run({ positionals }, ctx) {
      const id = requireId(positionals[0], '<id>');
      await revokeApiKeyById(await ctx.database(), id, CLI_ACTOR, ctx.now());
      ctx.out(`API key ${id} revoked.`);
    },
  },
];
