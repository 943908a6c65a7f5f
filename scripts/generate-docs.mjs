#!/usr/bin/env node
// Writes the docs that are generated from code: docs/configuration.md and docs/errors.md.
// Tests compare them with the code, so run `npm run docs:generate` after changing either.
import { writeFileSync } from 'node:fs';

const { renderConfigDocs } = await import('../dist/src/config-docs.js');
const { renderErrorDocs } = await import('../dist/src/http/errors-docs.js');
writeFileSync(new URL('../docs/configuration.md', import.meta.url), renderConfigDocs());
writeFileSync(new URL('../docs/errors.md', import.meta.url), renderErrorDocs());
