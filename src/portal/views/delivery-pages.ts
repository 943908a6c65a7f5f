import { DELIVERY_STATUSES } from '../../webhooks/deliveries.repository.js';
import type { DeliveryAttempt, DeliverySummary } from '../../delivery/history/delivery-history.repository.js';
import { EVENT_TOPICS } from '../../events/event-schema.js';
import type { WebhookRow } from '../../webhooks/webhook-access.js';
import { html } from '../html.js';
import { indentJsonText } from '../json-text.js';
import { csrfField, page, statusBadge, timestamp, type PageContext } from './layout.js';

const hookPath = (webhook: WebhookRow) => `/portal/${webhook.marketplace_code}/webhooks/${encodeURIComponent(webhook.code)}`;

export interface LogFilter {
  status?: string;
  event_id?: string;
  entity_id?: string;
  topic?: string;
}

/** Beside a status: per-entity order makes a pending delivery wait for an earlier one of its entity, linked. */
function waitingBehind(here: string, delivery: DeliverySummary) {
  return delivery.blocked_by !== null && html`<br><a href="${here}/deliveries/${delivery.blocked_by}">waiting behind #${delivery.blocked_by}</a>`;
}

/** Beside a status: the newer delivery of the same entity that superseded this one (latest-state mode), linked. */
function supersededBy(here: string, delivery: DeliverySummary) {
  return delivery.superseded_by !== null && html`<br><a href="${here}/deliveries/${delivery.superseded_by}">superseded by #${delivery.superseded_by}</a>`;
}

/** The log's URL with these filters (the form's GET parameters): a filtered log can be linked, and paging keeps them. */
export function logUrl(here: string, filter: LogFilter): string {
  const params = new URLSearchParams(Object.entries(filter).filter((entry): entry is [string, string] => typeof entry[1] === 'string' && entry[1] !== ''));
  const query = params.toString();
  return `${here}/deliveries${query ? `?${query}` : ''}`;
}

function options(values: readonly string[], selected: string | undefined, anyLabel: string) {
  return html`<option value="">${anyLabel}</option>${values.map((value) => html`<option value="${value}" ${selected === value && html`selected`}>${value}</option>`)}`;
}

export function deliveryLogPage(context: PageContext, webhook: WebhookRow, filter: LogFilter, rows: DeliverySummary[], nextUrl: string | null, error?: string) {
  const here = hookPath(webhook);
  return page(`Deliveries of ${webhook.name}`, context, html`
<p><a href="${here}">Back to the webhook</a></p>
<form method="get" action="${here}/deliveries" class="inline" role="search" aria-label="Filter deliveries">
  <div class="field"><label for="f-status">Status</label><select id="f-status" name="status">${options(DELIVERY_STATUSES, filter.status, 'any')}</select></div>
  <div class="field"><label for="f-topic">Topic</label><select id="f-topic" name="topic">${options(EVENT_TOPICS, filter.topic, 'any')}</select></div>
  <div class="field"><label for="f-event">Event id</label><input id="f-event" name="event_id" type="text" value="${filter.event_id ?? ''}"></div>
  <div class="field"><label for="f-entity">Entity id</label><input id="f-entity" name="entity_id" type="text" value="${filter.entity_id ?? ''}"></div>
  <button type="submit">Filter</button>
</form>
${error && html`<div class="alert error" role="alert"><p>${error}</p></div>`}
${rows.length === 0 ? html`<p>No deliveries match.</p>` : html`
<table>
  <thead><tr><th scope="col">Delivery</th><th scope="col">Entity</th><th scope="col">Topic</th><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Created</th><th scope="col">Next attempt</th></tr></thead>
  <tbody>${rows.map((row) => html`<tr>
    <td><a href="${here}/deliveries/${row.id}">#${row.id}</a></td>
    <td><a href="${logUrl(here, { ...filter, entity_id: row.entity_id })}" title="Only this entity's deliveries"><code>${row.entity_id}</code></a>${row.sequence !== null && html`<br><span class="hint">sequence ${row.sequence}</span>`}</td>
    <td><code>${row.topic}</code><br><code class="hint">${row.topic_path}</code></td>
    <td><code>${row.event_id}</code></td>
    <td>${statusBadge(row.status)}${waitingBehind(here, row)}${supersededBy(here, row)}</td>
    <td>${row.attempts}</td>
    <td>${row.last_status_code ?? row.last_error ?? '—'}</td>
    <td>${timestamp(row.created_at)}</td>
    <td>${timestamp(row.next_attempt_at)}</td>
  </tr>`)}</tbody>
</table>`}
<nav class="pager" aria-label="Pages">
  ${nextUrl ? html`<a href="${nextUrl}">Older deliveries</a>` : html`<span>End of the log.</span>`}
</nav>`);
}

/**
 * `notification`: the body as stored, the text every attempt sends (indented here, every token as
 * sent; the copy button copies what is shown).
 */
export function deliveryDetailPage(context: PageContext, webhook: WebhookRow, delivery: DeliverySummary, attempts: DeliveryAttempt[], notification: string, notice?: { kind: 'success' | 'error'; text: string }) {
  const here = hookPath(webhook);
  return page(`Delivery #${delivery.id}`, context, html`
${notice && html`<div class="alert ${notice.kind}" role="status"><p>${notice.text}</p></div>`}
<p><a href="${here}/deliveries">Back to the delivery log</a></p>
<dl class="facts">
  <dt>Event</dt><dd><code>${delivery.event_id}</code></dd>
  <dt>topic_path</dt><dd><code>${delivery.topic_path}</code></dd>
  <dt>Status</dt><dd>${statusBadge(delivery.status)}${waitingBehind(here, delivery)}${supersededBy(here, delivery)}</dd>
  <dt>Entity sequence</dt><dd>${delivery.sequence}</dd>
  <dt>Attempts</dt><dd>${delivery.attempts}</dd>
  <dt>Created</dt><dd>${timestamp(delivery.created_at)}</dd>
  <dt>Next attempt</dt><dd>${timestamp(delivery.next_attempt_at)}</dd>
  <dt>Completed</dt><dd>${timestamp(delivery.completed_at)}</dd>
</dl>
${delivery.status === 'held'
    ? html`<p>Held while the webhook is paused: resuming the webhook sends it.</p>`
    : delivery.status === 'superseded'
    ? html`<p>Superseded by a newer notification of the same entity (delivery mode latest): that one is sent instead, and this one never.</p>`
    : html`<form method="post" action="${here}/deliveries/${delivery.id}/retry" class="actions">${csrfField(context)}<button type="submit">Retry now</button></form>`}
<section aria-labelledby="notification-heading">
  <h2 id="notification-heading">Notification body ${attempts.length === 0 ? 'to be sent' : 'as sent'}</h2>
  <p class="hint">The same body on every attempt; the request headers and the answer of each are below. Indented here; the API's delivery resource (<code>notification</code>) gives it as sent.</p>
  <pre><code id="notification-body">${indentJsonText(notification)}</code></pre>
  <p><button type="button" class="secondary" data-copy="notification-body">Copy body</button> <span id="notification-body-status" role="status" aria-live="polite"></span></p>
</section>
<h2>Attempts</h2>
${attempts.length === 0 ? html`<p>No attempt yet.</p>` : attempts.map((attempt) => html`
<section aria-labelledby="attempt-${attempt.attempt}">
  <h3 id="attempt-${attempt.attempt}">Attempt ${attempt.attempt}: ${attempt.status_code === null ? attempt.error : html`HTTP ${attempt.status_code}`}</h3>
  <dl class="facts">
    <dt>Started</dt><dd>${timestamp(attempt.started_at)}</dd>
    <dt>Duration</dt><dd>${attempt.duration_ms} ms</dd>
    <dt>Response status</dt><dd>${attempt.status_code ?? 'none'}</dd>
    ${attempt.error && html`<dt>Error</dt><dd>${attempt.error}</dd>`}
  </dl>
  <h4>Request headers as sent</h4>
  ${attempt.request_headers ? html`<table><thead><tr><th scope="col">Header</th><th scope="col">Value</th></tr></thead><tbody>
    ${Object.entries(attempt.request_headers).map(([name, value]) => html`<tr><td><code>${name}</code></td><td><code>${value}</code></td></tr>`)}
  </tbody></table>` : html`<p>Not recorded.</p>`}
  <h4>Response body (first 4 KiB)</h4>
  <pre>${attempt.response_body || '(empty)'}</pre>
</section>`)}`);
}

export interface ReplayValues {
  status?: string[];
  since?: string;
  until?: string;
  topic?: string;
  entity_id?: string;
  event_id?: string;
}

/** Step one counts (dry run); step two, offered only after a count, sends. */
export function replayPage(context: PageContext, webhook: WebhookRow, values: ReplayValues, outcome?: { matched: number; replayed?: number; error?: string }) {
  const here = hookPath(webhook);
  const statuses = values.status ?? ['failed'];
  const counted = outcome && outcome.replayed === undefined && !outcome.error;
  return page(`Replay deliveries of ${webhook.name}`, context, html`
<p><a href="${here}">Back to the webhook</a></p>
<p>Replay sends matching finished deliveries again, with the same <code>webhook-id</code>, paced so that your receiver is not flooded. Count first, then send.</p>
${outcome?.error && html`<div class="alert error" role="alert"><p>${outcome.error}</p></div>`}
${outcome?.replayed !== undefined && html`<div class="alert success" role="status"><p>${outcome.replayed} deliveries queued again.</p></div>`}
${counted && html`<div class="alert" role="status"><p><strong>${outcome.matched}</strong> deliveries match this filter.</p></div>`}
<form method="post" action="${here}/replay">
  ${csrfField(context)}
  <fieldset><legend>Status</legend>
    ${(['failed', 'succeeded'] as const).map((status) => html`<label><input type="checkbox" name="status" value="${status}" ${statuses.includes(status) && html`checked`}> ${status}</label> `)}
  </fieldset>
  <div class="inline">
    <div class="field"><label for="r-since">Created from (UTC)</label><input id="r-since" name="since" type="datetime-local" value="${values.since ?? ''}"></div>
    <div class="field"><label for="r-until">Created before (UTC)</label><input id="r-until" name="until" type="datetime-local" value="${values.until ?? ''}"></div>
  </div>
  <div class="field"><label for="r-topic">Topic</label><select id="r-topic" name="topic">${options(EVENT_TOPICS, values.topic, 'any')}</select></div>
  <div class="field"><label for="r-entity">Entity id</label><input id="r-entity" name="entity_id" type="text" value="${values.entity_id ?? ''}"></div>
  <div class="field"><label for="r-event">Event id</label><input id="r-event" name="event_id" type="text" value="${values.event_id ?? ''}"></div>
  <div class="actions">
    <button type="submit" name="mode" value="count" class="${counted ? 'secondary' : ''}">Count matching deliveries</button>
    ${counted && outcome.matched > 0 && html`<button type="submit" name="mode" value="send">Replay ${outcome.matched} deliveries</button>`}
  </div>
</form>`);
}
