import { request } from 'undici';

/** The few API calls scenarios make to set up, as a client would. */
async function call<T>(baseUrl: string, method: 'GET' | 'POST', path: string, body?: unknown, token?: string): Promise<{ status: number; json: T; text: string }> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (token) headers.authorization = `Bearer ${token}`;
  const response = await request(`${baseUrl}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.body.text();
  return { status: response.statusCode, json: (text ? JSON.parse(text) : undefined) as T, text };
}

export interface TokenPair {
  token: string;
  refresh_token: string;
}

export async function login(baseUrl: string, username: string, password: string): Promise<TokenPair> {
  const answer = await call<TokenPair>(baseUrl, 'POST', '/api/v2/auth/login', { username, password });
  if (answer.status !== 200) throw new Error(`login of ${username} failed: ${answer.status} ${answer.text.slice(0, 300)}`);
  return answer.json;
}

/** Logs every user in, a few at a time (argon2 makes each login cost ≈15 ms of CPU). */
export async function loginAll(baseUrl: string, users: { username: string; password: string }[]): Promise<TokenPair[]> {
  const pairs: TokenPair[] = [];
  for (let i = 0; i < users.length; i += 4) {
    pairs.push(...(await Promise.all(users.slice(i, i + 4).map((user) => login(baseUrl, user.username, user.password)))));
  }
  return pairs;
}

export async function createWebhook(baseUrl: string, token: string, marketplace: string, webhook: { code: string; topic: string; callback_url: string; seller_id?: string; headers?: Record<string, string> }): Promise<void> {
  const answer = await call(baseUrl, 'POST', `/v1/${marketplace}/webhooks`, { name: `Bench ${webhook.code}`, ...webhook }, token);
  if (answer.status !== 201) throw new Error(`creating webhook ${webhook.code} failed: ${answer.status} ${answer.text.slice(0, 300)}`);
}

export async function getText(baseUrl: string, path: string, token: string): Promise<string> {
  const answer = await call(baseUrl, 'GET', path, undefined, token);
  if (answer.status !== 200) throw new Error(`GET ${path} failed: ${answer.status} ${answer.text.slice(0, 300)}`);
  return answer.text;
}
