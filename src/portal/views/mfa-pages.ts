import { MFA_CODE_MAX_LENGTH } from '../../auth/mfa/mfa-fields.js';
import { html, type Html } from '../html.js';
import { csrfField, page, timestamp, type PageContext } from './layout.js';

const codeField = (error?: string) => html`<div class="field">
    <label for="code">Code</label>
    <p class="hint" id="code-hint">The 6-digit code your authenticator app shows.</p>
    <input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required maxlength="${MFA_CODE_MAX_LENGTH}" aria-describedby="code-hint"${error ? html` aria-invalid="true"` : html``}>
  </div>`;

const alert = (error?: string) => error && html`<div class="alert error" role="alert"><p>${error}</p></div>`;

/** Sign-in, second step: the password was right; the code finishes it. */
export function mfaCodePage(state: { mfaToken: string; error?: string; passkeys?: boolean }) {
  return page('Enter your code', {}, html`
<p>Your account has a second factor. Enter the code of your authenticator app, or one of your recovery codes.</p>
${alert(state.error)}
<form method="post" action="/portal/login/mfa" hx-boost="false">
  <input type="hidden" name="mfa_token" value="${state.mfaToken}">
  ${codeField(state.error)}
  <button type="submit">Verify</button>
</form>
${state.passkeys && html`<p><button type="button" class="secondary" data-passkey="sign-in" data-mfa-token="${state.mfaToken}">Use a passkey instead</button> <span id="passkey-status" role="status" aria-live="polite"></span></p>`}
<p><a href="/portal/login">Start over</a></p>`);
}

/** The QR code (a PNG data URL made on the server: no third-party service sees the secret) and the secret to type. */
function enrolmentBody(qrDataUrl: string, secret: string, form: Html, error?: string): Html {
  return html`
<ol>
  <li>Scan this QR code with an authenticator app (any TOTP app: Google Authenticator, Aegis, 1Password, …).</li>
  <li>Or type this key into the app: <code class="secret" id="totp-secret">${secret}</code></li>
  <li>Enter the code the app shows to turn it on.</li>
</ol>
<p><img class="qr" src="${qrDataUrl}" alt="QR code of your authenticator key" width="240" height="240"></p>
${alert(error)}
${form}`;
}

/** A signed-in user enrols: the pending secret and the activation form. */
export function totpEnrolPage(context: PageContext, state: { qrDataUrl: string; secret: string; error?: string }) {
  return page('Set up an authenticator app', context, enrolmentBody(state.qrDataUrl, state.secret, html`
<form method="post" action="/portal/account/totp/activate" hx-boost="false">
  ${csrfField(context)}
  ${codeField(state.error)}
  <button type="submit">Turn on</button>
</form>
<p><a href="/portal/account">Cancel</a></p>`, state.error));
}

/** A user whose role requires a second factor, before any session: enrols with the sign-in's token. */
export function requiredEnrolPage(state: { mfaToken: string; qrDataUrl: string; secret: string; error?: string }) {
  return page('Set up your second factor', {}, html`
<p>Your role requires a second factor before you can sign in.</p>
${enrolmentBody(state.qrDataUrl, state.secret, html`
<form method="post" action="/portal/login/enrol" hx-boost="false">
  <input type="hidden" name="mfa_token" value="${state.mfaToken}">
  ${codeField(state.error)}
  <button type="submit">Turn on</button>
</form>`, state.error)}`);
}

/** Shown once, right after activation. */
export function recoveryCodesPage(context: PageContext, codes: string[], next: { href: string; label: string }) {
  return page('Your recovery codes', context, html`
<div class="alert warning" role="status">
  <p><strong>Save these recovery codes now: they are shown only this once.</strong> Each one signs you in once if you lose your authenticator.</p>
</div>
<pre class="secret" id="recovery-codes">${codes.join('\n')}</pre>
<p><button type="button" class="secondary" data-copy="recovery-codes">Copy codes</button> <span id="recovery-codes-status" role="status" aria-live="polite"></span></p>
<p><a href="${next.href}">${next.label}</a></p>`);
}

/** The account's security page: the second factor's state and what can be done with it. */
export interface PasskeyListItem {
  id: string;
  name: string;
  created_at: Date;
  last_used_at: Date | null;
}

export function securityPage(context: PageContext, state: { totp: 'none' | 'pending' | 'active'; recoveryCodesLeft: number; passkeys: PasskeyListItem[]; notice?: string; error?: string }) {
  return page('Sign-in security', context, html`
${state.notice && html`<div class="alert success" role="status"><p>${state.notice}</p></div>`}
${alert(state.error)}
<h2>Authenticator app</h2>
${state.totp === 'active'
    ? html`<p>On. Signing in asks for a code. Recovery codes left: ${state.recoveryCodesLeft}.</p>
<form method="post" action="/portal/account/totp/disable" hx-boost="false">
  ${csrfField(context)}
  ${codeField(state.error)}
  <button type="submit" class="secondary">Turn off</button>
</form>`
    : html`<p>Off. Add an authenticator app so that a stolen password alone cannot sign in.</p>
<form method="post" action="/portal/account/totp" hx-boost="false">
  ${csrfField(context)}
  <button type="submit">Set up an authenticator app</button>
</form>`}
<h2>Passkeys</h2>
<p>A passkey signs you in on its own (your device asks for its PIN, fingerprint or face), or instead of the code after your password.</p>
${state.passkeys.length === 0
    ? html`<p>No passkey yet.</p>`
    : html`<table>
  <caption>Your passkeys</caption>
  <thead><tr><th scope="col">Name</th><th scope="col">Added</th><th scope="col">Last used</th><th scope="col">Action</th></tr></thead>
  <tbody>${state.passkeys.map((key) => html`<tr>
    <td>${key.name}</td><td>${timestamp(key.created_at)}</td><td>${timestamp(key.last_used_at, 'never')}</td>
    <td><form method="post" action="/portal/account/passkeys/delete" hx-boost="false">${csrfField(context)}<input type="hidden" name="id" value="${key.id}"><button type="submit" class="secondary">Remove ${key.name}</button></form></td>
  </tr>`)}</tbody>
</table>`}
<div class="field">
  <label for="passkey-name">Name of the new passkey</label>
  <input id="passkey-name" name="passkey_name" type="text" maxlength="100" value="Passkey">
</div>
${csrfField(context)}
<p><button type="button" data-passkey="register">Add a passkey</button> <span id="passkey-status" role="status" aria-live="polite"></span></p>`);
}
