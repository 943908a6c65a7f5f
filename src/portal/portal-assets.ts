import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { projectRoot } from '../paths.js';

/**
 * The portal's static files, read once at start: htmx from its npm package (vendored by
 * dependency, served by Plaza: no CDN), and the portal's own CSS and script from public/portal.
 */
export function registerPortalAssets(app: FastifyInstance): void {
  const require = createRequire(import.meta.url);
  const assets: Record<string, { body: Buffer; type: string }> = {
    'htmx.min.js': { body: readFileSync(require.resolve('htmx.org/dist/htmx.min.js')), type: 'text/javascript; charset=utf-8' },
    'portal.js': { body: readFileSync(`${projectRoot}public/portal/portal.js`), type: 'text/javascript; charset=utf-8' },
    // @simplewebauthn/browser's browser build, served by Plaza like htmx (no CDN); its package
    // exports no subpath, so the file is found from the package's entry.
    'simplewebauthn-browser.js': { body: readFileSync(join(dirname(require.resolve('@simplewebauthn/browser')), '../dist/bundle/index.umd.min.js')), type: 'text/javascript; charset=utf-8' },
    'passkeys.js': { body: readFileSync(`${projectRoot}public/portal/passkeys.js`), type: 'text/javascript; charset=utf-8' },
    'portal.css': { body: readFileSync(`${projectRoot}public/portal/portal.css`), type: 'text/css; charset=utf-8' },
  };
  for (const [name, asset] of Object.entries(assets)) {
    app.get(`/portal/assets/${name}`, { schema: { hide: true } }, async (_request, reply) =>
      reply.type(asset.type).header('cache-control', 'public, max-age=3600').header('x-content-type-options', 'nosniff').send(asset.body),
    );
  }
}
