import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { AppError } from '../http/errors.js';
import { sameToken, type PortalSession } from './portal-sessions.js';

/**
 * Headers of every portal response. The CSP allows only Plaza's own scripts, styles and forms,
 * no inline code, and framing only by the origins of PORTAL_FRAME_ANCESTORS (none by default); it
 * names no scheme and has no upgrade-insecure-requests, so the portal also works when Plaza is
 * reached over plain HTTP by a host name. same-origin referrers: a portal link's token must not
 * leak to another site through the Referer header (no-referrer would also make browsers send
 * `Origin: null` on our own forms, which the origin check refuses).
 */
export function pageCsp(frameAncestors: readonly string[] = []): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
    `frame-ancestors ${frameAncestors.length === 0 ? "'none'" : frameAncestors.join(' ')}`,
    "base-uri 'none'",
  ].join('; ');
}

/**
 * The page headers for the configured frame ancestors, computed once. X-Frame-Options cannot name
 * an origin list (ALLOW-FROM is obsolete and ignored), so it is sent only when nothing may frame the
 * portal: with ancestors configured, browsers follow the CSP's frame-ancestors alone.
 */
export function pageHeadersFor(frameAncestors: readonly string[]): Record<string, string> {
  return {
    'content-security-policy': pageCsp(frameAncestors),
    'x-content-type-options': 'nosniff',
    ...(frameAncestors.length === 0 ? { 'x-frame-options': 'DENY' } : {}),
    'referrer-policy': 'same-origin',
    'cross-origin-opener-policy': 'same-origin',
    'cache-control': 'no-store',
  };
}

/**
 * A write must come from a portal page: browsers mark cross-site requests (Sec-Fetch-Site, Origin),
 * and the SameSite=Strict cookie is not sent on them anyway; both are checked so that neither
 * alone is relied on. When the portal may be framed (PORTAL_FRAME_ANCESTORS) the cookie is
 * SameSite=None and goes with cross-site requests too: this check and the form's CSRF token are
 * then what refuses a write from another site (a framed portal's own forms are same-origin).
 */
export function assertSameOrigin(request: FastifyRequest): void {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') throw crossSite();
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== 'null') {
    let same: boolean;
    try {
      // Through URL both sides drop a default port (:80, :443) the same way.
      same = new URL(origin).origin === new URL(`${request.protocol}://${request.host}`).origin;
    } catch {
      throw crossSite();
    }
    if (!same) throw crossSite();
  } else if (origin === 'null') {
    throw crossSite();
  }
}

/**
 * The form field that carries it, in every form that writes. Optional in the schema: a form
 * without it gets assertCsrfToken's 403, which says what to do, not a 400 about the request.
 */
export const CsrfField = Type.Optional(Type.String({ maxLength: 100 }));
/** A form of nothing but the token (the buttons: pause, retry, …). */
export const CsrfForm = Type.Object({ _csrf: CsrfField });

/** The session's synchronizer token must come back in the form (`_csrf`). */
export function assertCsrfToken(request: FastifyRequest, session: PortalSession): void {
  const body = request.body as Record<string, unknown> | undefined;
  if (!sameToken(body?._csrf, session.csrfToken)) throw new AppError('forbidden', 'The form is out of date (missing or wrong CSRF token). Reload the page and try again.');
}

const crossSite = () => new AppError('forbidden', 'Cross-site requests are refused.');
