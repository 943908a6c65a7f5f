import type { FieldError } from '../../http/errors.js';
import { html, type Html } from '../html.js';
import type { PortalSession } from '../portal-sessions.js';
import { errorSummary, fieldErrorText, fieldMessages, page } from './layout.js';

/** The sign-in form; `errors`: its fields' problems (an empty or too long name or password), all shown at once. */
export function loginPage(state: { username?: string; error?: string; errors?: FieldError[] }) {
  const input = (name: 'username' | 'password', label: string, attributes: Html) => {
    const messages = fieldMessages(state.errors, name);
    return html`<div class="field">
    <label for="${name}">${label}</label>
    <input id="${name}" name="${name}" ${attributes} required${messages.length > 0 && html` aria-invalid="true" aria-describedby="${name}-error"`}>
    ${fieldErrorText(name, messages)}
  </div>`;
  };
  return page('Sign in', {}, html`
<p>Sign in with your Plaza user name and password (seller or marketplace users) to see and control your webhooks.</p>
${state.error && html`<div class="alert error" role="alert"><p>${state.error}</p></div>`}
${errorSummary(state.errors)}
<form method="post" action="/portal/login" hx-boost="false" novalidate>
  ${input('username', 'User name', html`type="text" autocomplete="username" value="${state.username ?? ''}"`)}
  ${input('password', 'Password', html`type="password" autocomplete="current-password"`)}
  <button type="submit">Sign in</button>
</form>
<p><button type="button" class="secondary" data-passkey="sign-in">Use a passkey</button> <span id="passkey-status" role="status" aria-live="polite"></span></p>`);
}

/** token null: the link was unknown, expired or used already (not told apart). */
export function linkPage(token: string | null) {
  if (token === null) {
    return page('This portal link cannot be used', {}, html`
<div class="alert error" role="alert"><p>The link has expired or was used already. Portal links work once, for 15 minutes: ask for a new one.</p></div>
<p><a href="/portal/login">Sign in with a user name and password instead</a></p>`);
  }
  return page('Open the webhook portal', {}, html`
<p>This one-time link opens a portal session for the webhooks it was made for.</p>
<form method="post" action="/portal/link" hx-boost="false">
  <input type="hidden" name="token" value="${token}">
  <button type="submit">Open the portal</button>
</form>`);
}

export function marketplacesPage(session: PortalSession, marketplaces: string[]) {
  return page('Choose a marketplace', { signedInAs: session.displayName, csrfToken: session.csrfToken }, html`
${marketplaces.length === 0
    ? html`<p>You have no marketplace to manage webhooks in.</p>`
    : html`<ul>${marketplaces.map((code) => html`<li><a href="/portal/${code}/webhooks">${code}</a></li>`)}</ul>
<p><a href="/portal/overview">All your webhooks, every marketplace on one page</a></p>`}`);
}
