import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The package root, from both src/ (tests of the sources) and dist/src/ (the build). */
export const projectRoot = fileURLToPath(new URL(import.meta.url.includes('/dist/') ? '../../' : '../', import.meta.url));

export const packageVersion: string = (JSON.parse(readFileSync(`${projectRoot}package.json`, 'utf8')) as { version: string }).version;
