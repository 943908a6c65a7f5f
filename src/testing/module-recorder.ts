/**
 * Preloaded into a `plaza` process by a test (NODE_OPTIONS=--import <this file>): records the URL of
 * every module the process loads, by import or require, and writes them, one a line, to the file
 * PLAZA_MODULES_FILE names when the process exits.
 */
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const loaded = new Set<string>();
registerHooks({
  load(url, context, next) {
    loaded.add(url);
    return next(url, context);
  },
});
process.on('exit', () => {
  if (process.env.PLAZA_MODULES_FILE) writeFileSync(process.env.PLAZA_MODULES_FILE, [...loaded].join('\n'));
});
