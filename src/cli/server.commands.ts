import type { Role } from '../server.js';
import type { Command } from './command.js';
import { UsageError } from './usage-error.js';

const ROLES: Role[] = ['all', 'api', 'worker'];

export const serverCommands: Command[] = [
  {
    name: 'serve',
    args: '[--role all|api|worker]',
    summary: 'Run the API and/or the delivery worker (default: all)',
    details: 'Many `--role api` and `--role worker` processes can share one PostgreSQL (DATABASE_URL); they must share SECRETS_KEY.',
    options: { role: { type: 'string', default: 'all' } },
    async run({ values }, ctx) {
      if (!ROLES.includes(values.role as Role)) throw new UsageError(`--role must be all, api or worker, not "${String(values.role)}".`);
      // Imported on use: help and the other commands do not load the whole server.
      const { serve } = await import('../server.js');
      await serve(ctx.config(), values.role as Role);
    },
  },
  {
    name: 'migrate',
    args: '',
    summary: 'Apply pending database migrations',
    async run(_input, ctx) {
      // database() migrates too; migrating again here reports what happened.
      const { migrate } = await import('../db/migrate.js');
      const applied = await migrate(await ctx.database({ migrate: false }));
      ctx.out(applied.length ? `Applied ${applied.join(', ')}.` : 'The database is up to date.');
    },
  },
];
