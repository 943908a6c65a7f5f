import { html } from '../html.js';
import type { PortalSession } from '../portal-sessions.js';
import { page } from './layout.js';

const TITLES: Record<number, string> = { 400: 'Not valid', 401: 'Signed out', 403: 'Not allowed', 404: 'Not found', 409: 'Conflict', 429: 'Too many requests' };

export function errorPage(status: number, detail: string, session?: PortalSession) {
  const title = TITLES[status] ?? (status >= 500 ? 'Something went wrong' : 'Error');
  return page(title, session ? { signedInAs: session.displayName, csrfToken: session.csrfToken, marketplaceCode: session.scopeMarketplace ?? undefined } : {}, html`
<div class="alert error" role="alert"><p>${detail}</p></div>
<p>${status === 401 ? html`<a href="/portal/login">Sign in</a>` : html`<a href="/portal">Back to the portal</a>`}</p>`);
}
