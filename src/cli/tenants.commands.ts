import { listConnections, listMarketplaces, listSellers } from '../accounts/accounts.repository.js';
import { createConnection, createMarketplace, createSeller, deleteTenant, updateMarketplace, updateSeller } from '../admin/tenants.service.js';
import { CLI_ACTOR } from '../accounts/admin-audit.repository.js';
import { CLI_PAGE, optional, readAll, requireCode, requireId, requireName, table, type CliContext, type Command } from './command.js';
import { UsageError } from './usage-error.js';

const DEACTIVATE_DETAILS =
  'Revokes every session of its users; its users and API keys are refused from their next request on; events for it are refused ' +
  '(409 tenant_inactive); its webhooks are paused (reason tenant_deactivated) and what they match meanwhile is held. Admins are not affected.';
const ACTIVATE_DETAILS = 'Its users log in again and its API keys work again; sessions revoked by the deactivation stay revoked. Its paused webhooks resume and their held deliveries go out.';

async function setMarketplaceActive(ctx: CliContext, code: string, active: boolean): Promise<void> {
  if (!(await updateMarketplace(await ctx.database(), code, { active }, CLI_ACTOR, ctx.now()))) throw new UsageError(`There is no marketplace ${code}.`);
  ctx.out(`Marketplace ${code} is now ${active ? 'active' : 'inactive'}.${active ? '' : ' Its users\' sessions are revoked.'}`);
}

async function setSellerActive(ctx: CliContext, id: number, active: boolean): Promise<void> {
  if (!(await updateSeller(await ctx.database(), id, { active }, CLI_ACTOR, ctx.now()))) throw new UsageError(`There is no seller ${id}.`);
  ctx.out(`Seller ${id} is now ${active ? 'active' : 'inactive'}.${active ? '' : ' Its users\' sessions are revoked.'}`);
}

/** Marketplaces, sellers and the connections between them. */
export const tenantCommands: Command[] = [
  {
    name: 'marketplaces add',
    args: '<code> --name <name>',
    summary: 'Add a marketplace',
    options: { name: { type: 'string' } },
    async run({ positionals, values }, ctx) {
      const code = requireCode(positionals[0]);
      const name = requireName(values.name, '--name');
      await createMarketplace(await ctx.database(), code, name, CLI_ACTOR, ctx.now());
      ctx.out(`Marketplace ${code} added.`);
    },
  },
  {
    name: 'marketplaces list',
    args: '',
    summary: 'List marketplaces',
    async run(_input, ctx) {
      const db = await ctx.database();
      const rows = await readAll((last: { code: string } | undefined) => listMarketplaces(db, last?.code ?? '', CLI_PAGE));
      ctx.out(table(['CODE', 'NAME', 'ACTIVE', 'CREATED'], rows.map((row) => [row.code, row.name, row.active, row.created_at])));
    },
  },
  {
    name: 'marketplaces deactivate',
    args: '<code>',
    summary: 'Disable a marketplace: its users and API keys are refused, its users\' sessions revoked',
    details: DEACTIVATE_DETAILS,
    async run({ positionals }, ctx) {
      await setMarketplaceActive(ctx, requireCode(positionals[0]), false);
    },
  },
  {
    name: 'marketplaces activate',
    args: '<code>',
    summary: 'Enable a marketplace again (old sessions stay revoked)',
    details: ACTIVATE_DETAILS,
    async run({ positionals }, ctx) {
      await setMarketplaceActive(ctx, requireCode(positionals[0]), true);
    },
  },
  {
    name: 'marketplaces delete',
    args: '<code>',
    summary: 'Delete a marketplace nothing refers to any more',
    async run({ positionals }, ctx) {
      const code = requireCode(positionals[0]);
      if (!(await deleteTenant(await ctx.database(), 'marketplace', code, CLI_ACTOR, ctx.now()))) throw new UsageError(`There is no marketplace ${code}.`);
      ctx.out(`Marketplace ${code} deleted.`);
    },
  },
  {
    name: 'sellers add',
    args: '<id> --name <name>',
    summary: 'Add a seller',
    options: { name: { type: 'string' } },
    async run({ positionals, values }, ctx) {
      const id = requireId(positionals[0], '<id>');
      const name = requireName(values.name, '--name');
      await createSeller(await ctx.database(), id, name, CLI_ACTOR, ctx.now());
      ctx.out(`Seller ${id} added.`);
    },
  },
  {
    name: 'sellers list',
    args: '',
    summary: 'List sellers',
    async run(_input, ctx) {
      const db = await ctx.database();
      const rows = await readAll((last: { id: number } | undefined) => listSellers(db, last?.id ?? 0, CLI_PAGE));
      ctx.out(table(['ID', 'NAME', 'ACTIVE', 'CREATED'], rows.map((row) => [row.id, row.name, row.active, row.created_at])));
    },
  },
  {
    name: 'sellers deactivate',
    args: '<id>',
    summary: 'Disable a seller: its users and API keys are refused, its users\' sessions revoked',
    details: DEACTIVATE_DETAILS,
    async run({ positionals }, ctx) {
      await setSellerActive(ctx, requireId(positionals[0], '<id>'), false);
    },
  },
  {
    name: 'sellers activate',
    args: '<id>',
    summary: 'Enable a seller again (old sessions stay revoked)',
    details: ACTIVATE_DETAILS,
    async run({ positionals }, ctx) {
      await setSellerActive(ctx, requireId(positionals[0], '<id>'), true);
    },
  },
  {
    name: 'sellers delete',
    args: '<id>',
    summary: 'Delete a seller nothing refers to any more',
    async run({ positionals }, ctx) {
      const id = requireId(positionals[0], '<id>');
      if (!(await deleteTenant(await ctx.database(), 'seller', id, CLI_ACTOR, ctx.now()))) throw new UsageError(`There is no seller ${id}.`);
      ctx.out(`Seller ${id} deleted.`);
    },
  },
  {
    name: 'connections add',
    args: '--seller <id> --marketplace <code>',
    summary: 'Connect a seller to a marketplace; prints the new connection id',
    options: { seller: { type: 'string' }, marketplace: { type: 'string' } },
    async run({ values }, ctx) {
      const sellerId = requireId(values.seller, '--seller');
      const code = requireCode(values.marketplace, '--marketplace');
      const row = await createConnection(await ctx.database(), sellerId, code, CLI_ACTOR, ctx.now());
      ctx.out(String(row.id));
    },
  },
  {
    name: 'connections list',
    args: '[--seller <id>] [--marketplace <code>]',
    summary: 'List connections',
    options: { seller: { type: 'string' }, marketplace: { type: 'string' } },
    async run({ values }, ctx) {
      const filter = { sellerId: optional(values.seller, (v) => requireId(v, '--seller')), marketplaceCode: optional(values.marketplace, (v) => requireCode(v, '--marketplace')) };
      const db = await ctx.database();
      const rows = await readAll((last: { id: number } | undefined) => listConnections(db, last?.id ?? 0, CLI_PAGE, filter));
      ctx.out(table(['ID', 'SELLER', 'MARKETPLACE', 'CREATED'], rows.map((row) => [row.id, row.seller_id, row.marketplace_code, row.created_at])));
    },
  },
  {
    name: 'connections delete',
    args: '<id>',
    summary: 'Delete a connection',
    async run({ positionals }, ctx) {
      const id = requireId(positionals[0], '<id>');
      if (!(await deleteTenant(await ctx.database(), 'connection', id, CLI_ACTOR, ctx.now()))) throw new UsageError(`There is no connection ${id}.`);
      ctx.out(`Connection ${id} deleted.`);
    },
  },
];
