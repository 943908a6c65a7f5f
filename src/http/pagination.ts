import type { FastifyRequest } from 'fastify';

/**
 * The RFC 8288 `Link` header of the next page (GitHub's convention): the request's own path and
 * query with the new cursor, relative so that it never depends on the Host header.
 */
export function nextPageLink(request: FastifyRequest, cursor: string): string {
  const url = new URL(request.url, 'http://plaza.invalid');
  url.searchParams.set('cursor', cursor);
  return `<${url.pathname}${url.search}>; rel="next"`;
}
