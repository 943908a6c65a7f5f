import { listConnections, listMarketplaces, listSellers } from '../accounts/accounts.repository.js';
import { createConnection, createMarketplace, createSeller, deleteTenant } from '../accounts/tenants.service.js';
import { CLI_ACTOR } from '../admin/admin-audit.repository.js';
import { CLI_PAGE, optional, readAll, requireCode, requireId, requireText, table, type Command } from './command.js';
import { UsageError } from './usage-error.js';

/** Marketplaces, sellers and the connections between them. */
export const tenantCommands: Command[] = [
  {
    name: 'marketplaces add',
    args: '<code> --name <name>',
    summary: 'Add a marketplace',
    options: { name: { type: 'string' } },
    async run({ positionals, values }, ctx) {
      const code = requireCode(positionals[0]);
      const name = requireText(values.name, '--name');
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
      ctx.out(table(['CODE', 'NAME', 'CREATED'], rows.map((row) => [row.code, row.name, row.created_at])));
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
      const name = requireText(values.name, '--name');
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
      ctx.out(table(['ID', 'NAME', 'CREATED'], rows.map((row) => [row.id, row.name, row.created_at])));
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
