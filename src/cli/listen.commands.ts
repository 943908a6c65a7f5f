import type { Command } from './command.js';
import { runListenCommand } from './listen.js';

/** Development helpers that need neither configuration nor database. */
export const listenCommands: Command[] = [
  {
    name: 'listen',
    args: '--port <n> [--secret whsec_…] [--status <code>] [--host <address>]',
    summary: 'A local webhook receiver for development: prints each notification, verifies its signature, answers <code> (200)',
    // listen.ts parses and validates its own options (parseListenOptions).
    options: { port: { type: 'string' }, secret: { type: 'string' }, status: { type: 'string' }, host: { type: 'string' } },
    async run(input) {
      await runListenCommand(input.args);
    },
  },
];
