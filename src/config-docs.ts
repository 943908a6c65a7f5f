import { describeConfig } from './config.js';

/** docs/configuration.md, generated from the config schema so that the two cannot drift apart. */
export function renderConfigDocs(): string {
  const rows = describeConfig().map(({ name, default: value, description, minimum, maximum }) => {
    const shown = value === undefined ? '(unset)' : value === '' ? '(empty)' : `\`${String(value)}\``;
    return `| \`${name}\` | ${shown} | ${range(minimum, maximum)} | ${description.replace(/\|/g, '\\|')} |`;
  });
  return [
    '# Configuration',
    '',
    'Plaza reads its whole configuration from environment variables, validated at start against one schema',
    '(`src/config.ts`). A wrong value stops start-up with a message that names the variable. This page is',
    'generated from that schema by `npm run docs:generate`; a test fails when it is out of date.',
    '',
    'Traces are the one exception: they take the standard `OTEL_*` variables of the OpenTelemetry SDK',
    '(`OTEL_EXPORTER_OTLP_ENDPOINT` turns them on), read as the SDK reads them, not by this schema; see',
    '[operations.md](operations.md#traces).',
    '',
    '| Variable | Default | Allowed | Meaning |',
    '|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

/** A number's bounds as the schema checks them: "100 – 86400000", "≥ 0"; nothing for text. */
function range(minimum: number | undefined, maximum: number | undefined): string {
  if (minimum !== undefined && maximum !== undefined) return `${minimum} – ${maximum}`;
  if (minimum !== undefined) return `≥ ${minimum}`;
  if (maximum !== undefined) return `≤ ${maximum}`;
  return '';
}
