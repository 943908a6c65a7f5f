import type { WebhookRow } from '../../webhooks/webhook-access.js';
import { html } from '../html.js';
import type { SessionWebhooks } from '../portal-webhook-list.js';
import { page, timestamp, type PageContext } from './layout.js';
import { health, readOnlySection } from './webhook-pages.js';

const base = (webhook: Pick<WebhookRow, 'marketplace_code' | 'code'>) => `/portal/${webhook.marketplace_code}/webhooks/${encodeURIComponent(webhook.code)}`;

/**
 * Every marketplace the session may open, each with its webhooks as that marketplace's list shows
 * them (portal-webhook-list.ts): state, last success, held deliveries, and links into the
 * marketplace's pages. A link's session has one marketplace, so one section.
 */
export function overviewPage(context: PageContext, sections: { marketplaceCode: string; list: SessionWebhooks }[]) {
  const total = sections.reduce((sum, section) => sum + section.list.rows.length, 0);
  const failing = sections.reduce((sum, section) => sum + section.list.rows.filter((row) => row.active && row.failing_since).length, 0);
  return page('All your webhooks', context, html`
${sections.length === 0
    ? html`<p>You have no marketplace to manage webhooks in.</p>`
    : html`<p>${total} ${total === 1 ? 'webhook' : 'webhooks'} in ${sections.length} ${sections.length === 1 ? 'marketplace' : 'marketplaces'}${failing > 0 && html`, <strong>${failing} failing</strong>`}.</p>`}
${sections.map(({ marketplaceCode: mkt, list }) => html`
<section aria-labelledby="mkt-${mkt}">
<h2 id="mkt-${mkt}">${mkt}</h2>
<p><a href="/portal/${mkt}/webhooks">Webhooks in ${mkt}</a> · <a href="/portal/${mkt}/webhooks/new">New webhook in ${mkt}</a></p>
${list.rows.length === 0 ? html`<p>No webhooks yet.</p>` : html`
<div class="table-scroll">
<table>
  <thead><tr><th scope="col">Webhook</th><th scope="col">Topic</th><th scope="col">State</th><th scope="col">Last success</th><th scope="col">Held</th><th scope="col">Log</th></tr></thead>
  <tbody>
  ${list.rows.map((webhook) => {
    const openable = !list.openable || list.openable.has(Number(webhook.id));
    return html`<tr>
    <td>${openable ? html`<a href="${base(webhook)}">${webhook.name}</a>` : webhook.name}<br><code>${webhook.code}</code></td>
    <td><code>${webhook.topic}</code></td>
    <td>${health(webhook)}</td>
    <td>${timestamp(webhook.last_success_at, 'never')}</td>
    <td>${list.held.get(Number(webhook.id)) ?? 0}</td>
    <td>${openable ? html`<a href="${base(webhook)}/deliveries">Delivery log</a>` : '—'}</td>
  </tr>`;
  })}
  </tbody>
</table>
</div>`}
${list.readOnly && readOnlySection(list.readOnly, 3)}
</section>`)}`);
}
