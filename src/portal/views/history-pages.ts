import type { WebhookRow } from '../../webhooks/webhook-access.js';
import type { FieldChange } from '../../webhooks/webhook-history.js';
import type { HistoryRow } from '../../webhooks/webhook-history.repository.js';
import { html, type Html } from '../html.js';
import { page, timestamp, type PageContext } from './layout.js';

const hookPath = (webhook: Pick<WebhookRow, 'marketplace_code' | 'code'>) => `/portal/${webhook.marketplace_code}/webhooks/${encodeURIComponent(webhook.code)}`;

const CHANNELS: Record<string, string> = { api: 'API', portal: 'portal', portal_link: 'portal link', admin_api: 'admin API', cli: 'command line' };

/** Who, in words: "user alice (seller)", "API key ci (marketplace)", "portal link made by bob", "command line". */
function who(row: HistoryRow): string {
  const name = row.actor_name ?? `#${row.actor_user_id ?? row.actor_api_key_id ?? '?'}`;
  const role = row.actor_role ? ` (${row.actor_role})` : '';
  switch (row.actor_kind) {
    case 'api_key': return `API key ${name}${role}`;
    case 'portal_link': return `portal link #${row.actor_portal_link_id ?? '?'} made by ${name}, acting as ${row.actor_role ?? '?'}`;
    case 'cli': return 'command line';
    default: return `user ${name}${role}`;
  }
}

const value = (v: FieldChange['before']) => (v === undefined ? '' : Array.isArray(v) ? (v.length === 0 ? 'none' : v.join(', ')) : String(v));

function change(c: FieldChange): Html {
  if (c.before === undefined && c.after === undefined) return html`<code>${c.field}</code>`;
  if (c.before === undefined) return html`<code>${c.field}</code>: ${value(c.after)}`;
  return html`<code>${c.field}</code>: ${value(c.before)} → ${value(c.after)}`;
}

function what(row: HistoryRow): Html {
  const d = row.detail ?? {};
  const facts: string[] = [];
  if (d.delivery_id !== undefined) facts.push(`delivery #${d.delivery_id}`);
  if (d.replayed !== undefined) facts.push(`${d.replayed} of ${d.matched ?? 0} replayed`);
  if (d.success !== undefined) facts.push(d.success ? `answered ${d.status_code}` : `failed: ${d.error ?? d.status_code}`);
  if (d.disabled_reason) facts.push(`by the tenant's ${row.action === 'pause' ? 'deactivation' : 'activation'}`);
  return html`${row.changes.map((c, i) => html`${i > 0 && html`<br>`}${change(c)}`)}${facts.length > 0 && html`${row.changes.length > 0 && html`<br>`}${facts.join('; ')}`}`;
}

/** The history table, newest first: when, what, which fields, who, through what. */
export function historyTable(rows: HistoryRow[]): Html {
  if (rows.length === 0) return html`<p>No changes recorded.</p>`;
  return html`
<table class="history">
  <thead><tr><th scope="col">When</th><th scope="col">Action</th><th scope="col">Changes</th><th scope="col">Who</th><th scope="col">Through</th></tr></thead>
  <tbody>${rows.map((row) => html`<tr>
    <td>${timestamp(row.created_at)}</td>
    <td>${row.action.replace('_', ' ')}</td>
    <td>${what(row)}</td>
    <td>${who(row)}</td>
    <td>${CHANNELS[row.channel] ?? row.channel}</td>
  </tr>`)}</tbody>
</table>`;
}

/** The newest entries, for the webhook's own page, with a link to the whole history. */
export function historySection(webhook: Pick<WebhookRow, 'marketplace_code' | 'code'>, rows: HistoryRow[], more: boolean): Html {
  return html`
<h2>History</h2>
<p class="hint">Every change to this webhook, newest first: never a secret or a header value.</p>
${historyTable(rows)}
${more && html`<p><a href="${hookPath(webhook)}/history">Whole history</a></p>`}`;
}

export function historyPage(context: PageContext, webhook: WebhookRow, rows: HistoryRow[], nextUrl: string | null): Html {
  return page(`History of ${webhook.name}`, context, html`
<p><a href="${hookPath(webhook)}">Back to the webhook</a></p>
${historyTable(rows)}
<nav class="pager" aria-label="Pages">
  ${nextUrl ? html`<a href="${nextUrl}">Older entries</a>` : html`<span>End of the history.</span>`}
</nav>`);
}
