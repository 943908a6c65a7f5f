import { describeConfig } from './config.js';

/** docs/configuration.md, generated from the config schema so that the two cannot drift apart. */
export function renderConfigDocs(): string {
  const rows = describeConfig().map(({ name, default: value, description }) => {
    const shown = value === undefined ? '(unset)' : value === '' ? '(empty)' : `\`${String(value)}\``;
    return `| \`${name}\` | ${shown} | ${description.replace(/\|/g, '\\|')} |`;
  });
  return [
    '# Configuration',
    '',
    'Plaza reads its whole configuration from environment variables, validated at start against one schema',
    '(`src/config.ts`). A wrong value stops start-up with a message that names the variable. This page is',
    'generated from that schema by `npm run docs:generate`; a test fails when it is out of date.',
    '',
    '| Variable | Default | Meaning |',
    '|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}
