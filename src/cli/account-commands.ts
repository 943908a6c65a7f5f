import { parseArgs } from 'node:util';
import {
  insertConnection,
  insertMarketplace,
  insertSeller,
  insertUser,
  setUserActive,
  type Role,
} from '../accounts/accounts.repository.js';
import { hashPassword } from '../auth/passwords.js';
import { isUniqueViolation, type Database } from '../db/database.js';
import { CODE_PATTERN } from '../http/path-params.js';
import { UsageError } from './usage-error.js';

const CODE = new RegExp(CODE_PATTERN);
const ROLES: Role[] = ['seller', 'marketplace', 'admin'];

/** The account commands of the CLI: marketplaces, sellers, connections and users. */
export async function runAccountCommand(db: Database, command: string, args: string[], stdin: NodeJS.ReadableStream = process.stdin): Promise<void> {
  const [action, ...rest] = args;
  const key = `${command} ${action ?? ''}`.trim();
  try {
    switch (key) {
      case 'marketplaces add': {
        const { positionals, values } = parse(rest, { name: { type: 'string' } });
        const code = requireCode(positionals[0]);
        await insertMarketplace(db, code, requireText(values.name, '--name'));
        console.log(`Marketplace ${code} added.`);
        return;
      }
      case 'sellers add': {
        const { positionals, values } = parse(rest, { name: { type: 'string' } });
        const id = requireId(positionals[0], '<id>');
        await insertSeller(db, id, requireText(values.name, '--name'));
        console.log(`Seller ${id} added.`);
        return;
      }
      case 'connections add': {
        const { values } = parse(rest, { seller: { type: 'string' }, marketplace: { type: 'string' } });
        const id = await insertConnection(db, requireId(values.seller, '--seller'), requireCode(values.marketplace, '--marketplace'));
        console.log(id);
        return;
      }
      case 'users add': {
        const { positionals, values } = parse(rest, {
          seller: { type: 'string' },
          role: { type: 'string', default: 'seller' },
          marketplace: { type: 'string' },
          inactive: { type: 'boolean', default: false },
        });
        const username = requireText(positionals[0], '<username>');
        const role = values.role as Role;
        if (!ROLES.includes(role)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}.`);
        if ((role === 'marketplace') !== (values.marketplace !== undefined)) {
          throw new UsageError('--marketplace <code> is required with --role marketplace, and only with it.');
        }
        const password = await readPassword(stdin);
        const id = await insertUser(db, {
          username,
          passwordHash: await hashPassword(password),
          sellerId: requireId(values.seller, '--seller'),
          role,
          marketplaceCode: values.marketplace === undefined ? null : requireCode(values.marketplace, '--marketplace'),
          active: !values.inactive,
        });
        console.log(`User ${username} added with id ${id}.`);
        return;
      }
      case 'users set-active': {
        const [username, flag] = rest;
        if (!username || (flag !== 'true' && flag !== 'false')) throw new UsageError('Usage: plaza users set-active <username> true|false');
        if (!(await setUserActive(db, username, flag === 'true'))) throw new UsageError(`No user is named "${username}".`);
        console.log(`User ${username} is now ${flag === 'true' ? 'active' : 'inactive'}.`);
        return;
      }
      default:
        throw new UsageError(`Unknown command "${key}".`, true);
    }
  } catch (error) {
    throw explain(error);
  }
}

type Options = NonNullable<Parameters<typeof parseArgs>[0]>['options'];

function parse<O extends Options>(args: string[], options: O) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    // Node's own message goes on about `--` and positionals; its first sentence is the point.
    throw new UsageError(`${(error as Error).message.split('. ')[0]}.`, true);
  }
}

const CREATE_COMMAND: Record<string, string> = {
  sellers: 'plaza sellers add <id> --name <name>',
  marketplaces: 'plaza marketplaces add <code> --name <name>',
};

/**
 * Database refusals the user can act on, in words. PostgreSQL's detail reads
 * `Key (seller_id)=(999) is not present in table "sellers".`: only the value and table are shown.
 */
function explain(error: unknown): unknown {
  if (error instanceof UsageError) return error;
  const e = error as { code?: string; detail?: string };
  const value = /\)=\((.*)\)/.exec(e.detail ?? '')?.[1];
  if (isUniqueViolation(error)) return new UsageError(value ? `"${value}" already exists.` : 'It already exists.');
  if (e.code === '23503') {
    const table = /table "(\w+)"/.exec(e.detail ?? '')?.[1] ?? '';
    const noun = table.replace(/s$/, '') || 'reference';
    const hint = CREATE_COMMAND[table] ? ` Add it first: ${CREATE_COMMAND[table]}` : '';
    return new UsageError(`There is no ${noun} ${value ?? ''}.${hint}`.replace(' .', '.'));
  }
  return error;
}

function requireText(value: string | boolean | undefined, name: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`${name} is required.`);
  return value.trim();
}

function requireCode(value: string | boolean | undefined, name = '<code>'): string {
  const code = requireText(value, name);
  if (!CODE.test(code)) throw new UsageError(`${name} may hold only letters, digits, "_" and "-" (1 to 100).`);
  return code;
}

function requireId(value: string | boolean | undefined, name: string): number {
  const text = requireText(value, name);
  if (!/^[1-9][0-9]{0,8}$/.test(text)) throw new UsageError(`${name} must be a positive integer.`);
  return Number(text);
}

/** The password comes from standard input, never from an argument (which `ps` would show). */
async function readPassword(stdin: NodeJS.ReadableStream): Promise<string> {
  if ((stdin as NodeJS.ReadStream).isTTY) process.stderr.write('Password (then Enter and Ctrl-D): ');
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(Buffer.from(chunk as Buffer));
  const password = Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
  if (password.length < 8) throw new UsageError('The password (read from standard input) must have at least 8 characters.');
  if (password.length > 1024) throw new UsageError('The password may have at most 1024 characters.');
  return password;
}
