import { findUserByUsername, listUsers, type Role } from '../accounts/accounts.repository.js';
import { createUser, deleteUser, resetPassword, setUserActiveById, type PasswordPolicy } from '../admin/users.service.js';
import { CLI_ACTOR } from '../accounts/admin-audit.repository.js';
import type { Database } from '../db/database.js';
import { CLI_PAGE, optional, readAll, readPassword, requireCode, requireId, requireText, requireUserName, table, type CliContext, type Command } from './command.js';
import { UsageError } from './usage-error.js';

const ROLES: Role[] = ['seller', 'marketplace', 'admin'];

export function requireRole(value: string | boolean | undefined): Role {
  if (!ROLES.includes(value as Role)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}.`);
  return value as Role;
}

async function userIdOf(db: Database, username: string): Promise<number> {
  const user = await findUserByUsername(db, username);
  if (!user) throw new UsageError(`No user is named "${username}".`);
  return user.id;
}

/** The password comes from standard input: a refusal names it so ("password: This password is too common…"). */
const passwordPolicyOf = (ctx: CliContext): PasswordPolicy => ({ minScore: ctx.config().PASSWORD_MIN_SCORE, field: 'password' });

async function setActive(ctx: CliContext, username: string, active: boolean): Promise<void> {
  const db = await ctx.database();
  await setUserActiveById(db, await userIdOf(db, username), active, CLI_ACTOR, ctx.now());
  ctx.out(`User ${username} is now ${active ? 'active' : 'inactive'}.${active ? '' : ' Their sessions are revoked.'}`);
}

/** API users: the password is always read from standard input. */
export const userCommands: Command[] = [
  {
    name: 'users add',
    args: '<username> [--seller <id>] [--role seller|marketplace|admin] [--marketplace <code>] [--inactive]',
    summary: 'Add a user; the password is read from standard input',
    details: '--seller is required except for admins; --marketplace is required with --role marketplace, and only with it.',
    options: { seller: { type: 'string' }, role: { type: 'string', default: 'seller' }, marketplace: { type: 'string' }, inactive: { type: 'boolean', default: false } },
    async run({ positionals, values }, ctx) {
      const username = requireUserName(positionals[0], '<username>');
      const role = requireRole(values.role);
      if ((role === 'marketplace') !== (values.marketplace !== undefined)) {
        throw new UsageError('--marketplace <code> is required with --role marketplace, and only with it.');
      }
      if (role !== 'admin' && values.seller === undefined) throw new UsageError('--seller is required (except with --role admin).');
      const sellerId = optional(values.seller, (v) => requireId(v, '--seller')) ?? null;
      const marketplaceCode = optional(values.marketplace, (v) => requireCode(v, '--marketplace')) ?? null;
      const password = await readPassword(ctx.stdin);
      const user = await createUser(await ctx.database(), { username, password, sellerId, role, marketplaceCode, active: !values.inactive }, CLI_ACTOR, ctx.now(), passwordPolicyOf(ctx));
      ctx.out(`User ${username} added with id ${user.id}.`);
    },
  },
  {
    name: 'users list',
    args: '',
    summary: 'List users (never their passwords)',
    async run(_input, ctx) {
      const db = await ctx.database();
      const rows = await readAll((last: { id: number } | undefined) => listUsers(db, last?.id ?? 0, CLI_PAGE));
      ctx.out(table(['ID', 'USERNAME', 'ROLE', 'SELLER', 'MARKETPLACE', 'ACTIVE'], rows.map((u) => [u.id, u.username, u.role, u.seller_id, u.marketplace_code, u.active])));
    },
  },
  {
    name: 'users deactivate',
    args: '<username>',
    summary: 'Disable a user and revoke all their sessions',
    async run({ positionals }, ctx) {
      await setActive(ctx, requireText(positionals[0], '<username>'), false);
    },
  },
  {
    name: 'users activate',
    args: '<username>',
    summary: 'Enable a user again (their old sessions stay revoked)',
    async run({ positionals }, ctx) {
      await setActive(ctx, requireText(positionals[0], '<username>'), true);
    },
  },
  {
    name: 'users set-active',
    args: '<username> true|false',
    summary: 'Enable or disable a user (disabling revokes their sessions)',
    async run({ positionals }, ctx) {
      const [username, flag] = positionals;
      if (!username || (flag !== 'true' && flag !== 'false')) throw new UsageError('Usage: plaza users set-active <username> true|false');
      await setActive(ctx, username, flag === 'true');
    },
  },
  {
    name: 'users reset-password',
    args: '<username>',
    summary: 'Set a new password (read from standard input); ends every session of the user',
    async run({ positionals }, ctx) {
      const username = requireText(positionals[0], '<username>');
      const password = await readPassword(ctx.stdin);
      const db = await ctx.database();
      await resetPassword(db, await userIdOf(db, username), password, CLI_ACTOR, ctx.now(), passwordPolicyOf(ctx));
      ctx.out(`Password of ${username} changed; their sessions are revoked.`);
    },
  },
  {
    name: 'users delete',
    args: '<username>',
    summary: 'Delete a user with their sessions (the audit trail keeps the name)',
    async run({ positionals }, ctx) {
      const username = requireText(positionals[0], '<username>');
      const db = await ctx.database();
      await deleteUser(db, await userIdOf(db, username), CLI_ACTOR, ctx.now());
      ctx.out(`User ${username} deleted.`);
    },
  },
];
