import { notificationCatalogue } from '../../events/notification-catalogue.js';
import { html } from '../html.js';
import { page, type PageContext } from './layout.js';
import { VERIFY_SNIPPETS } from './verify-snippets.js';

export function cataloguePage(context: PageContext) {
  const mkt = context.marketplaceCode!;
  const entries = notificationCatalogue(mkt);
  return page('Event catalogue', context, html`
<p>Each topic a webhook can subscribe to, the <code>topic_path</code> its notifications carry, a JSON Schema of the body and an example.
A webhook on <code>order/status_change/&lt;status_code&gt;</code> receives only the status changes into that status.
A webhook's filter selects on these bodies (dotted paths such as <code>payload.order.status</code>); test one on an example below with
<code>POST /v1/${mkt}/webhooks/filter-test</code>, or on a webhook's latest notification from its page.
When the producer leaves them out, Plaza fills in <code>changes</code> (publication/update: what changed since the last publication) and
<code>state_from</code> (the state the order was in); a publication/update or order/update that changed nothing is not sent.</p>
<nav aria-label="Topics"><ul>${entries.map((entry) => html`<li><a href="#${entry.topic.replace('/', '-')}">${entry.topic}</a></li>`)}
<li><a href="#verify">Verifying signatures</a></li></ul></nav>
${entries.map((entry) => html`
<section aria-labelledby="${entry.topic.replace('/', '-')}">
  <h2 id="${entry.topic.replace('/', '-')}">${entry.topic}</h2>
  <p><code>topic_path</code>: <code>${entry.topicPathForm}</code></p>
  <details><summary>JSON Schema</summary><pre>${JSON.stringify(entry.schema, null, 2)}</pre></details>
  <h3>Example notification body</h3>
  <pre>${JSON.stringify(entry.example, null, 2)}</pre>
</section>`)}
<section aria-labelledby="verify">
  <h2 id="verify">Verifying signatures</h2>
  <p>Every notification is signed the <a href="https://www.standardwebhooks.com/">Standard Webhooks</a> way: headers <code>webhook-id</code>,
  <code>webhook-timestamp</code> and <code>webhook-signature</code> over the raw body, with your webhook's <code>whsec_…</code> secret.
  Verify the raw body bytes before parsing them, and reject old timestamps (the libraries allow 5 minutes).</p>
  ${VERIFY_SNIPPETS.map((snippet, index) => html`
  <h3 id="snippet-${index}-title">${snippet.language}</h3>
  <p class="hint">${snippet.install}</p>
  <pre id="snippet-${index}" aria-labelledby="snippet-${index}-title">${snippet.code}</pre>
  <p><button type="button" class="secondary" data-copy="snippet-${index}">Copy ${snippet.language} snippet</button> <span id="snippet-${index}-status" role="status" aria-live="polite"></span></p>`)}
</section>`);
}
