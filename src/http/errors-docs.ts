import { errorCatalog } from './errors.js';

/** docs/errors.md, generated from the error catalog (a test keeps it current). */
export function renderErrorDocs(): string {
  const rows = Object.entries(errorCatalog).map(([code, { status, title }]) => `| \`${code}\` | ${status} | ${title} |`);
  return [
    '# Error codes',
    '',
    'Every error response is `application/problem+json` (RFC 9457). `code` is stable API contract; `type` is',
    '`urn:plaza:problem:<code>`. Generated from `src/http/errors.ts` by `npm run docs:generate`.',
    '',
    '| code | status | meaning |',
    '|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}
