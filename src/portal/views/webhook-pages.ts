import { disabledMessage } from '../../webhooks/disabled-reasons.js';
import type { FieldError } from '../../http/errors.js';
import type { TestResult } from '../../delivery/test-notification.routes.js';
import type { WebhookRow } from '../../webhooks/webhook-access.js';
import { FIXED_TOPICS } from '../../webhooks/webhook-validators.js';
import { html, type Html } from '../html.js';
import { csrfField, errorSummary, field, fieldErrorText, fieldMessages, page, statusBadge, timestamp, type PageContext } from './layout.js';

const base = (webhook: Pick<WebhookRow, 'marketplace_code' | 'code'>) => `/portal/${webhook.marketplace_code}/webhooks/${encodeURIComponent(webhook.code)}`;

/** One word for a webhook's state, for the list and the detail. */
export function health(webhook: WebhookRow): Html {
  if (!webhook.active) return statusBadge(webhook.disabled_reason === 'disabled_by_user' ? 'paused' : 'disabled');
  return statusBadge(webhook.failing_since ? 'failing' : 'healthy');
}

export const reasonText = (reason: string | null) => (reason === 'disabled_by_user' ? 'Paused by a user: new events are held.' : disabledMessage(reason));

/** A header value is never shown where the viewer may not manage the webhook (portal-access.ts). */
const MASKED = '••••••';

/**
 * A seller's own webhooks in a link session whose maker may not manage them (a marketplace's link
 * for that seller): listed read-only, no link to a page, header names only, with masked values.
 */
export function readOnlySection(readOnly: { sellerId: number; webhooks: WebhookRow[] }, level: 2 | 3 = 2): Html {
  return html`
${level === 2 ? html`<h2>Seller ${readOnly.sellerId}'s own webhooks (read-only)</h2>` : html`<h3>Seller ${readOnly.sellerId}'s own webhooks (read-only)</h3>`}
<p class="hint">The seller manages these with its own sign-in; a portal link made by the marketplace shows them only.</p>
${readOnly.webhooks.length === 0 ? html`<p>None.</p>` : html`
<table>
  <thead><tr><th scope="col">Webhook</th><th scope="col">Topic</th><th scope="col">State</th><th scope="col">Headers</th></tr></thead>
  <tbody>
  ${readOnly.webhooks.map((webhook) => html`<tr>
    <td>${webhook.name}<br><code>${webhook.code}</code></td>
    <td><code>${webhook.topic}</code></td>
    <td>${health(webhook)}</td>
    <td>${Object.keys(webhook.headers).length === 0 ? 'none' : Object.keys(webhook.headers).map((name) => html`<code>${name}: ${MASKED}</code> `)}</td>
  </tr>`)}
  </tbody>
</table>`}`;
}

/**
 * `openable`: the webhooks an admin can open by code (all, when undefined); see addressableByAdmin.
 * `readOnly`: a seller's own webhooks the session may only see (readOnlySection).
 */
export function webhookListPage(context: PageContext, webhooks: WebhookRow[], held: Map<number, number>, openable?: ReadonlySet<number>, readOnly?: { sellerId: number; webhooks: WebhookRow[] }) {
  const mkt = context.marketplaceCode!;
  return page(`Webhooks in ${mkt}`, context, html`
<p><a class="button" href="/portal/${mkt}/webhooks/new">New webhook</a></p>
${webhooks.length === 0 ? html`<p>No webhooks yet.</p>` : html`
<table>
  <caption class="hint">Health at a glance</caption>
  <thead><tr><th scope="col">Webhook</th><th scope="col">Topic</th><th scope="col">State</th><th scope="col">Last success</th><th scope="col">Failing since</th><th scope="col">Held</th><th scope="col">Disabled reason</th></tr></thead>
  <tbody>
  ${webhooks.map((webhook) => html`<tr>
    <td>${!openable || openable.has(Number(webhook.id))
      ? html`<a href="${base(webhook)}">${webhook.name}</a>`
      : html`${webhook.name} <span class="hint">(${webhook.tenant_kind} ${webhook.tenant_id}; other tenants use this code too, so it opens only with that tenant's own credentials)</span>`}<br><code>${webhook.code}</code></td>
    <td><code>${webhook.topic}</code></td>
    <td>${health(webhook)}</td>
    <td>${timestamp(webhook.last_success_at, 'never')}</td>
    <td>${timestamp(webhook.failing_since)}</td>
    <td>${held.get(Number(webhook.id)) ?? 0}</td>
    <td>${reasonText(webhook.disabled_reason) ?? '—'}</td>
  </tr>`)}
  </tbody>
</table>`}
${readOnly && readOnlySection(readOnly)}`);
}

export interface WebhookFormValues {
  code?: string;
  name?: string;
  topic?: string;
  status_code?: string;
  callback_url?: string;
  seller_id?: string;
  headers?: string;
  delivery_mode?: string;
  /** The filter as JSON text; empty: none. */
  filter?: string;
  /** 'true' when the checkbox is ticked. */
  send_traceparent?: string;
}

/** A filter as the form and the detail page show it: indented JSON, '' for none. */
export const filterText = (filter: Record<string, unknown> | null) => (filter === null ? '' : JSON.stringify(filter, null, 2));

/** Create (no `existing`) or edit. Field errors are the API's own messages, shown on their fields. */
export function webhookFormPage(context: PageContext, options: { existing?: WebhookRow; values: WebhookFormValues; errors?: FieldError[]; detail?: string; sellerEditable: boolean }) {
  const { existing, values, errors } = options;
  const mkt = context.marketplaceCode!;
  const action = existing ? `${base(existing)}/edit` : `/portal/${mkt}/webhooks/new`;
  const topicErrors = fieldMessages(errors, 'topic');
  const headerErrors = fieldMessages(errors, 'headers');
  const modeErrors = fieldMessages(errors, 'delivery_mode');
  // The filter's problems are named by their path inside it (body.filter.payload.x.$gt): all shown on it.
  const filterErrors = fieldMessages(errors, 'filter');
  return page(existing ? `Edit ${existing.name}` : 'New webhook', context, html`
${errorSummary(errors, options.detail)}
<form method="post" action="${action}" novalidate>
  ${csrfField(context)}
  ${existing ? html`<p>Code <code>${existing.code}</code> and topic <code>${existing.topic}</code> cannot be changed.</p>` : html`
  ${field({ name: 'code', label: 'Code', value: values.code, errors, required: true, hint: 'Identifier inside the marketplace: letters, digits, _ or -. Cannot be changed later.' })}`}
  ${field({ name: 'name', label: 'Name', value: values.name, errors, required: true })}
  ${!existing && html`
  <div class="field">
    <label for="f-topic">Topic</label>
    <p class="hint" id="f-topic-hint">What the webhook receives. See the <a href="/portal/${mkt}/events">event catalogue</a> for each topic's body.</p>
    <select id="f-topic" name="topic" aria-describedby="f-topic-hint${topicErrors.length ? ' f-topic-error' : ''}" ${topicErrors.length > 0 && html`aria-invalid="true"`}>
      ${FIXED_TOPICS.map((topic) => html`<option value="${topic}" ${values.topic === topic && html`selected`}>${topic}</option>`)}
    </select>
    ${fieldErrorText('f-topic', topicErrors)}
  </div>
  ${field({ name: 'status_code', label: 'Only this order status (optional)', value: values.status_code, errors, hint: 'With topic order/status_change: receive only changes into this status code, e.g. APRO.' })}`}
  ${field({ name: 'callback_url', label: 'Callback URL', value: values.callback_url, errors, required: true, type: 'url', hint: 'The https URL that receives the notifications.' })}
  ${options.sellerEditable
    ? field({ name: 'seller_id', label: 'Seller', value: values.seller_id ?? '*', errors, hint: '* for every seller, or one seller id.' })
    : html`<input type="hidden" name="seller_id" value="${values.seller_id ?? '*'}">`}
  <div class="field">
    <label for="f-headers">Headers</label>
    <p class="hint" id="f-headers-hint">Added to each notification, one per line as <code>Name: value</code>.</p>
    <textarea id="f-headers" name="headers" aria-describedby="f-headers-hint${headerErrors.length ? ' f-headers-error' : ''}" ${headerErrors.length > 0 && html`aria-invalid="true"`}>${values.headers ?? ''}</textarea>
    ${fieldErrorText('f-headers', headerErrors)}
  </div>
  <div class="field">
    <label for="f-delivery-mode">Delivery mode</label>
    <p class="hint" id="f-delivery-mode-hint">Every notification, or per entity only the newest not yet sent (for stock and price: the older ones are superseded and never sent).</p>
    <select id="f-delivery-mode" name="delivery_mode" aria-describedby="f-delivery-mode-hint${modeErrors.length ? ' f-delivery-mode-error' : ''}" ${modeErrors.length > 0 && html`aria-invalid="true"`}>
      <option value="all" ${(values.delivery_mode ?? 'all') === 'all' && html`selected`}>all: every notification</option>
      <option value="latest" ${values.delivery_mode === 'latest' && html`selected`}>latest: only the newest state of each entity</option>
    </select>
    ${fieldErrorText('f-delivery-mode', modeErrors)}
  </div>
  <div class="field">
    <label for="f-filter">Filter (optional)</label>
    <p class="hint" id="f-filter-hint">Only notifications whose body matches get sent, as JSON: e.g. <code>{"payload.order.status": {"$in": ["APRO", "PROC"]}}</code>. Dotted paths, a value for equality, or <code>$eq $ne $in $nin $gt $gte $lt $lte $exists</code>; <code>$and $or $not</code>. Empty: every notification of the topic.</p>
    <textarea id="f-filter" name="filter" spellcheck="false" aria-describedby="f-filter-hint${filterErrors.length ? ' f-filter-error' : ''}" ${filterErrors.length > 0 && html`aria-invalid="true"`}>${values.filter ?? ''}</textarea>
    ${fieldErrorText('f-filter', filterErrors)}
  </div>
  <div class="field">
    <label><input type="checkbox" id="f-send-traceparent" name="send_traceparent" value="true" aria-describedby="f-send-traceparent-hint" ${values.send_traceparent === 'true' && html`checked`}> Send trace context (<code>traceparent</code>)</label>
    <p class="hint" id="f-send-traceparent-hint">When the operator traces Plaza with OpenTelemetry, each notification carries the W3C <code>traceparent</code> of its send, so that your receiver's traces can join it. Off by default: it shows the receiver Plaza's trace ids.</p>
  </div>
  <button type="submit">${existing ? 'Save changes' : 'Create webhook'}</button>
  <a href="${existing ? base(existing) : `/portal/${mkt}/webhooks`}">Cancel</a>
</form>`);
}

/** The secret appears once: after create, and after a rotation (with what the overlap means). */
export function secretPage(context: PageContext, webhook: WebhookRow, secret: string, previousExpiresAt?: Date) {
  return page(previousExpiresAt ? 'New signing secret' : 'Webhook created', context, html`
<div class="alert warning" role="status">
  <p><strong>Copy the signing secret now: it is shown only this once.</strong> Your receiver verifies each notification's <code>webhook-signature</code> with it.</p>
</div>
<p><code class="secret" id="secret">${secret}</code></p>
<p><button type="button" class="secondary" data-copy="secret">Copy secret</button> <span id="secret-status" role="status" aria-live="polite"></span></p>
${previousExpiresAt && html`<h2>How the rotation works</h2>
<p>Until ${timestamp(previousExpiresAt)} the previous secret keeps signing alongside the new one: every notification carries
two signatures in <code>webhook-signature</code> (separated by a space), and a receiver that verifies with either secret accepts it.
Switch your receiver to the new secret before then; after that only the new secret signs.</p>`}
<p><a href="${base(webhook)}">Go to the webhook</a></p>`);
}

/** `history`: the newest entries of the webhook's history (portal-history.routes.ts); `healthCharts`: its charts (health-chart.ts). */
export function webhookDetailPage(context: PageContext, webhook: WebhookRow, heldCount: number, notice?: { kind: 'success' | 'error'; text: string }, history?: Html, filterDraft?: string, healthCharts?: Html) {
  const here = base(webhook);
  return page(webhook.name, context, html`
${notice && html`<div class="alert ${notice.kind}" role="status"><p>${notice.text}</p></div>`}
<dl class="facts">
  <dt>Code</dt><dd><code>${webhook.code}</code></dd>
  <dt>Topic</dt><dd><code>${webhook.topic}</code></dd>
  <dt>Callback URL</dt><dd><code>${webhook.callback_url}</code></dd>
  <dt>Seller</dt><dd>${webhook.seller_id === '*' ? 'every seller' : webhook.seller_id}</dd>
  <dt>Delivery mode</dt><dd>${webhook.delivery_mode === 'latest' ? 'latest: only the newest state of each entity' : 'all: every notification'}</dd>
  <dt>Headers</dt><dd>${Object.keys(webhook.headers).length === 0 ? 'none' : Object.keys(webhook.headers).map((name) => html`<code>${name}</code> `)}</dd>
  <dt>Filter</dt><dd>${webhook.filter === null ? 'none: every notification of the topic' : html`<pre><code>${filterText(webhook.filter)}</code></pre>`}</dd>
  <dt>State</dt><dd>${health(webhook)} ${reasonText(webhook.disabled_reason)}</dd>
  <dt>Last success</dt><dd>${timestamp(webhook.last_success_at, 'never')}</dd>
  <dt>Failing since</dt><dd>${timestamp(webhook.failing_since)}</dd>
  <dt>Disabled at</dt><dd>${timestamp(webhook.disabled_at)}</dd>
  <dt>Held deliveries</dt><dd>${heldCount}</dd>
</dl>
<div class="actions">
  <a class="button secondary" href="${here}/deliveries">Delivery log</a>
  <a class="button secondary" href="${here}/replay">Replay</a>
  <a class="button secondary" href="${here}/edit">Edit</a>
  <form method="post" action="${here}/test">${csrfField(context)}<button type="submit" class="secondary">Send test</button></form>
  <form method="post" action="${here}/${webhook.active ? 'pause' : 'resume'}">${csrfField(context)}<button type="submit">${webhook.active ? 'Pause' : 'Resume'}</button></form>
  <form method="post" action="${here}/rotate-secret">${csrfField(context)}<button type="submit" class="secondary">Rotate secret</button></form>
</div>
<form method="post" action="${here}/filter-test" class="filter-test">
  ${csrfField(context)}
  <div class="field">
    <label for="f-filter-test">Test a filter on this webhook's latest notification</label>
    <p class="hint" id="f-filter-test-hint">Nothing is saved or sent. Empty: no filter.</p>
    <textarea id="f-filter-test" name="filter" spellcheck="false" aria-describedby="f-filter-test-hint">${filterDraft ?? filterText(webhook.filter)}</textarea>
  </div>
  <button type="submit" class="secondary">Test filter</button>
</form>
<p class="hint">Pause holds the events that arrive meanwhile; Resume sends them, in order, at once.
A rotation keeps the previous secret signing alongside the new one for a while, so receivers can switch without losing notifications.</p>
${healthCharts}
${history}`);
}

export function testNotice(result: TestResult): { kind: 'success' | 'error'; text: string } {
  return result.success
    ? { kind: 'success', text: `Test sent: the receiver answered ${result.status_code} in ${result.duration_ms} ms.` }
    : { kind: 'error', text: `Test failed: ${result.error} (${result.duration_ms} ms).` };
}
