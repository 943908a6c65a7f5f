import { apiKeyCommands } from './api-keys.commands.js';
import { backupCommands } from './backup.commands.js';
import type { Command } from './command.js';
import { keyCommands } from './keys.commands.js';
import { listenCommands } from './listen.commands.js';
import { serverCommands } from './server.commands.js';
import { tenantCommands } from './tenants.commands.js';
import { userCommands } from './users.commands.js';

/** Every command of `plaza`, in the order the usage text lists them. Add a group here. */
export const COMMANDS: Command[] = [...serverCommands, ...tenantCommands, ...userCommands, ...apiKeyCommands, ...keyCommands, ...backupCommands, ...listenCommands];
