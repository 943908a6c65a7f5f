#!/usr/bin/env node
// The compiled CLI. dist/ comes from `npm run build` (the development `npm start` and `npm test`
// build it themselves); a production install builds once and then runs without TypeScript.
import { existsSync } from 'node:fs';

if (!existsSync(new URL('../dist/src/main.js', import.meta.url))) {
  console.error('plaza: dist/ is missing; run `npm run build` first.');
  process.exit(2);
}
await import('../dist/src/main.js');
