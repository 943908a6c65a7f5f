import assert from 'node:assert/strict';
import type { TestContext } from './test-app.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
export const HOST = 'plaza.test';
const ORIGIN = `http://${HOST}`;

export interface RawHistoryRow {
  id: number;
  webhook_id: number;
  action: string;
  actor_kind: string;
  actor_role: string | null;
  actor_user_id: number | null;
  actor_api_key_id: number | null;
  actor_name: string | null;
  actor_portal_link_id: string | null;
  channel: string;
  changes: { field: string; before?: unknown; after?: unknown }[];
  detail: Record<string, unknown> | null;
}

/** The history rows written after `afterId`, oldest first, as stored. */
export async function rowsAfter(ctx: TestContext, afterId: number): Promise<RawHistoryRow[]> {
  const { rows } = await ctx.db.query<RawHistoryRow>(`SELECT * FROM webhook_history WHERE id > $1 ORDER BY id`, [afterId]);
  return rows.map((row) => ({ ...row, id: Number(row.id), webhook_id: Number(row.webhook_id) }));
}

export async function lastHistoryId(ctx: TestContext): Promise<number> {
  const { rows } = await ctx.db.query<{ id: string | null }>(`SELECT max(id)::text AS id FROM webhook_history`);
  return Number(rows[0]!.id ?? 0);
}

/** Runs `action` and returns the one history row it wrote (fails on none or several). */
export async function exactlyOneRow(ctx: TestContext, action: () => Promise<unknown>): Promise<RawHistoryRow> {
  const before = await lastHistoryId(ctx);
  await action();
  const rows = await rowsAfter(ctx, before);
  assert.equal(rows.length, 1, `expected exactly one history row, got ${JSON.stringify(rows)}`);
  return rows[0]!;
}

/** A portal session (password sign-in or link) driven as a browser would: cookie, CSRF token, same origin. */
export class PortalClient {
  private constructor(private readonly ctx: TestContext, readonly cookie: string, private csrf = '') {}

  static async signIn(ctx: TestContext, username: string, password: string, marketplaceCode: string): Promise<PortalClient> {
    const response = await ctx.app.inject({ method: 'POST', url: '/portal/login', headers: { ...FORM, host: HOST, origin: ORIGIN }, payload: new URLSearchParams({ username, password }).toString() });
    assert.equal(response.statusCode, 303, response.body);
    return PortalClient.withCookie(ctx, response, marketplaceCode);
  }

  /** Opens a portal link (the URL of POST /v1/{mkt}/portal-links). */
  static async openLink(ctx: TestContext, url: string, marketplaceCode: string): Promise<PortalClient> {
    const token = url.split('/portal/link/')[1]!;
    const response = await ctx.app.inject({ method: 'POST', url: '/portal/link', headers: { ...FORM, host: HOST, origin: ORIGIN }, payload: `token=${token}` });
    assert.equal(response.statusCode, 303, response.body);
    return PortalClient.withCookie(ctx, response, marketplaceCode);
  }

  private static async withCookie(ctx: TestContext, response: { headers: Record<string, unknown> }, marketplaceCode: string): Promise<PortalClient> {
    const client = new PortalClient(ctx, String(response.headers['set-cookie']).split(';')[0]!);
    const form = await client.get(`/portal/${marketplaceCode}/webhooks/new`);
    client.csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)![1]!;
    return client;
  }

  get(url: string) {
    return this.ctx.app.inject({ method: 'GET', url, headers: { host: HOST, cookie: this.cookie } });
  }

  post(url: string, fields: Record<string, string> = {}) {
    return this.ctx.app.inject({ method: 'POST', url, headers: { ...FORM, host: HOST, origin: ORIGIN, cookie: this.cookie }, payload: new URLSearchParams({ _csrf: this.csrf, ...fields }).toString() });
  }
}
