import type { FastifyInstance } from 'fastify';

interface KnownPath {
  pattern: RegExp;
  methods: Set<string>;
}

/** `/v1/:marketplace_code/events` → a regular expression matching the concrete paths of the route. */
function patternOf(url: string): RegExp {
  const source = url
    .split('/')
    .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment === '*' ? '.*' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  // Exactly: Fastify does not route `/x/` to `/x`, so neither is it a path whose methods count.
  return new RegExp(`^${source}$`);
}

/**
 * Remembers every route's path and methods (register before the routes), so that the not-found
 * handler can tell "no such path" (404) from "no such method on this path" (405 with Allow, as
 * RFC 9110 §15.5.6 asks). Returns the methods a concrete path supports; empty when none.
 */
export function trackAllowedMethods(app: FastifyInstance): (path: string) => string[] {
  const paths = new Map<string, KnownPath>();
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const known = paths.get(route.url) ?? { pattern: patternOf(route.url), methods: new Set<string>() };
    for (const method of methods) known.methods.add(method.toUpperCase());
    paths.set(route.url, known);
  });
  return (path) => {
    const allowed = new Set<string>();
    for (const known of paths.values()) if (known.pattern.test(path)) for (const method of known.methods) allowed.add(method);
    return [...allowed].sort();
  };
}
