import type { FieldError } from '../../http/errors.js';
import { html, type Html } from '../html.js';
import { controlIdOf, formFieldOf, plainMessagesOf } from './form-errors.js';

export interface PageContext {
  /** Absent on the sign-in pages. */
  signedInAs?: string;
  csrfToken?: string;
  marketplaceCode?: string;
}

// htmx settings: no eval, no inline styles (the CSP forbids both), and error pages are swapped in
// like any other page (they carry the messages the user needs).
const HTMX_CONFIG = JSON.stringify({
  includeIndicatorStyles: false,
  allowEval: false,
  allowScriptTags: false,
  historyCacheSize: 0,
  responseHandling: [{ code: '204', swap: false }, { code: '...', swap: true }],
});

/** The page shell: skip link, header with navigation, one main landmark, scripts served by Plaza. */
export function page(title: string, context: PageContext, body: Html): Html {
  const mkt = context.marketplaceCode;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="htmx-config" content="${HTMX_CONFIG}">
<title>${title} · Plaza webhook portal</title>
<link rel="stylesheet" href="/portal/assets/portal.css">
<script src="/portal/assets/htmx.min.js" defer></script>
<script src="/portal/assets/portal.js" defer></script>
<script src="/portal/assets/simplewebauthn-browser.js" defer></script>
<script src="/portal/assets/passkeys.js" defer></script>
</head>
<body hx-boost="true">
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/portal">Plaza webhooks</a>
  ${context.signedInAs && html`<nav aria-label="Main">
    <ul>
      <li><a href="/portal/overview">Overview</a></li>
      ${mkt && html`<li><a href="/portal/${mkt}/webhooks">Webhooks</a></li>
      <li><a href="/portal/${mkt}/events">Event catalogue</a></li>`}
      <li><a href="/portal/account">Sign-in security</a></li>
    </ul>
  </nav>
  <form method="post" action="/portal/logout" class="signout">
    <input type="hidden" name="_csrf" value="${context.csrfToken}">
    <span>Signed in as ${context.signedInAs}</span>
    <button type="submit" class="secondary">Sign out</button>
  </form>`}
</header>
<main id="main" tabindex="-1">
<h1>${title}</h1>
${body}
</main>
</body>
</html>`;
}

export function csrfField(context: PageContext): Html {
  return html`<input type="hidden" name="_csrf" value="${context.csrfToken}">`;
}

/** A labelled input with its API validation message attached (aria-describedby, aria-invalid). */
export function field(options: {
  name: string;
  label: string;
  value?: string;
  errors?: FieldError[];
  hint?: string;
  type?: string;
  required?: boolean;
  readonly?: boolean;
  autocomplete?: string;
}): Html {
  const id = `f-${options.name}`;
  const messages = fieldMessages(options.errors, options.name);
  const describedBy = [options.hint ? `${id}-hint` : '', messages.length ? `${id}-error` : ''].filter(Boolean).join(' ');
  return html`<div class="field">
  <label for="${id}">${options.label}</label>
  ${options.hint && html`<p class="hint" id="${id}-hint">${options.hint}</p>`}
  <input id="${id}" name="${options.name}" type="${options.type ?? 'text'}" value="${options.value ?? ''}"
    ${options.required && html`required`} ${options.readonly && html`readonly`}
    ${options.autocomplete && html`autocomplete="${options.autocomplete}"`}
    ${describedBy && html`aria-describedby="${describedBy}"`} ${messages.length > 0 && html`aria-invalid="true"`}>
  ${fieldErrorText(id, messages)}
</div>`;
}

/**
 * A form field's messages, in plain words (form-errors.ts): `body.callback_url` and
 * `body.headers.X-Key` belong to `callback_url` and `headers`.
 */
export function fieldMessages(errors: FieldError[] | undefined, name: string): string[] {
  return plainMessagesOf(errors, name);
}

/** The messages under a field, one per line, for its aria-describedby. */
export function fieldErrorText(id: string, messages: string[]): Html {
  return html`${messages.length > 0 && html`<p class="error" id="${id}-error">${messages.map((message, index) => html`${index > 0 && html`<br>`}${message}`)}</p>`}`;
}

/**
 * Above a form that was refused: what went wrong, and every field's message as a link to its field,
 * all from one answer. `detail` is for a refusal that is no field's (a 403, a limit); a validation
 * error's own detail (`body.code: …`) is never shown, its fields' messages are.
 */
export function errorSummary(errors: FieldError[] | undefined, detail?: string): Html {
  // One entry per message a field shows (fieldMessages), in the order of the errors.
  const names = [...new Set((errors ?? []).map(formFieldOf).filter((name) => name !== ''))];
  const fieldErrors = names.flatMap((name) => fieldMessages(errors, name).map((message) => ({ name, message })));
  if (fieldErrors.length === 0 && !detail) return html``;
  const heading = fieldErrors.length === 0 ? detail : fieldErrors.length === 1 ? 'Please correct this field:' : `Please correct these ${fieldErrors.length} problems:`;
  return html`<div class="alert error" role="alert">
  <p>${heading}</p>
  ${fieldErrors.length > 0 && html`<ul>${fieldErrors.map((error) => html`<li><a href="#${controlIdOf(error.name)}">${error.message}</a></li>`)}</ul>`}
</div>`;
}

export function timestamp(value: Date | string | null | undefined, empty = '—'): Html {
  if (!value) return html`${empty}`;
  const iso = new Date(value).toISOString();
  return html`<time datetime="${iso}">${iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}</time>`;
}

export function statusBadge(status: string): Html {
  return html`<span class="badge badge-${status}">${status}</span>`;
}
