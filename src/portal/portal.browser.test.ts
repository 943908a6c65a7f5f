import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { chromium, type Browser, type Page } from 'playwright-core';
import { buildApp, type App } from '../app.js';
import { issueAccessToken } from '../auth/access-tokens.js';
import { systemClock } from '../clock.js';
import { loadConfig, type Config } from '../config.js';
import { Receiver } from '../testing/receiver.js';
import { startDeliveryWorker, type DeliveryWorker } from '../delivery/worker.js';
import { order } from '../testing/events.js';
import { generateKeys, type Keys } from '../keys.js';
import { projectRoot } from '../paths.js';
import { bearer, seedConnection, seedUser, type SeededUser } from '../testing/fixtures.js';
import { assertNoSidewaysScroll } from '../testing/narrow-screen.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';

/**
 * The portal in real Chromium (Debian's package, driven by playwright-core): the flows a seller
 * goes through, and axe-core on every page. Screenshots go to docs/images with PLAZA_SCREENSHOTS=1.
 */
const CHROMIUM = process.env.PLAZA_CHROMIUM ?? '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `Chromium not found at ${CHROMIUM}: install it (apt-get install -y chromium) to run the browser tests`;
const SHOTS = process.env.PLAZA_SCREENSHOTS ? join(projectRoot, 'docs/images') : join(tmpdir(), `plaza-portal-shots-${process.pid}`);

describe('webhook portal in Chromium', { skip }, () => {
  let app: App;
  let db: TestDatabase;
  let keys: Keys;
  let config: Config;
  let worker: DeliveryWorker;
  let receiver: Receiver;
  let browser: Browser;
  let origin: string;
  let ana: SeededUser;
  let bruno: SeededUser;
  let marketplaceUser: SeededUser;
  const axeSource = readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  const cspViolations: string[] = [];
  const checked = new Set<string>();

  before(async () => {
    config = loadConfig({ LOG_LEVEL: 'silent', WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8', DELIVERY_RETRY_SCHEDULE: '1h', DELIVERY_RETRY_JITTER: '0', DELIVERY_POLL_INTERVAL_MS: '200' });
    [db, keys] = await Promise.all([createTestDatabase(), generateKeys()]);
    await seedConnection(db, 1, 'MKT');
    await seedConnection(db, 2, 'MKT');
    ana = await seedUser(db, { username: 'ana', password: 'ana-portal-pass', sellerId: 1 });
    bruno = await seedUser(db, { username: 'bruno', sellerId: 2 });
    marketplaceUser = await seedUser(db, { username: 'mkt-staff', role: 'marketplace', marketplaceCode: 'MKT', sellerId: 1 });
    app = await buildApp({ config, db, keys, clock: systemClock, logger: false });
    await app.listen({ host: '127.0.0.1', port: 0 });
    // By host name, over plain HTTP: the case the CSP must not break.
    origin = `http://localhost:${(app.server.address() as AddressInfo).port}`;
    worker = await startDeliveryWorker({ config, db, keys, clock: systemClock, logger: pino({ level: 'silent' }) });
    receiver = await Receiver.start();
    mkdirSync(SHOTS, { recursive: true });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  });
  after(async () => {
    await browser?.close();
    await worker?.stop();
    await receiver?.close();
    await app?.close();
    await db?.close();
  });

  const tokenOf = (user: SeededUser) =>
    issueAccessToken(keys, config, { userId: user.id, sessionId: '00000000-0000-4000-8000-000000000000', sellerId: user.sellerId, role: user.role, marketplaceCode: user.marketplaceCode }, new Date()).then(bearer);
  const api = async (user: SeededUser, method: 'POST' | 'GET', url: string, payload?: object) =>
    app.inject({ method, url, headers: await tokenOf(user), ...(payload ? { payload } : {}) });
  const sendOrder = async (reference: string) => {
    const response = await api(ana, 'POST', '/v1/MKT/events', { topic: 'order/create', seller_id: 1, entity_id: reference, order: order(reference), author: 'browser-test' });
    assert.equal(response.statusCode, 202, response.body);
  };

  async function newPage(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    const page = await context.newPage();
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) cspViolations.push(message.text());
    });
    page.on('pageerror', (error) => cspViolations.push(`page error: ${error.message}`));
    return page;
  }

  /** axe-core in the page: no serious or critical violation. Evaluated over the DevTools protocol, so the page CSP stays as it is. */
  async function checkPage(page: Page, name: string): Promise<void> {
    await page.evaluate(await axeSource);
    const violations = await page.evaluate(async () => {
      const result = await (globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> } }).axe.run();
      return result.violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical').map((violation) => `${violation.id} (${violation.impact}, ${violation.nodes.length} nodes)`);
    });
    assert.deepEqual(violations, [], `axe on ${name}`);
    await assertNoSidewaysScroll(page, name);
    checked.add(name);
    // caret: 'initial': Playwright's caret-hiding style would be an inline style, which the CSP (rightly) blocks.
    await page.screenshot({ path: join(SHOTS, `portal-${name}.png`), fullPage: name !== 'events', caret: 'initial' });
  }

  /** Reloads until the text shows up: the worker sends in the background. */
  async function reloadUntil(page: Page, text: string | RegExp, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (await page.getByText(text).first().isVisible().catch(() => false)) return;
      if (Date.now() > deadline) assert.fail(`"${String(text)}" did not show up on ${page.url()}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
      await page.reload();
    }
  }

  const heading = (page: Page, name: string | RegExp) => page.getByRole('heading', { level: 1, name }).waitFor();

  test('a seller signs in, creates a webhook, debugs a failing delivery, retries, replays, pauses and resumes', async () => {
    const page = await newPage();
    await page.goto(`${origin}/portal`);
    await heading(page, 'Sign in');
    await checkPage(page, 'login');
    await page.getByLabel('User name').fill('ana');
    await page.getByLabel('Password').fill('wrong password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('The user name or the password is wrong.').waitFor();
    await page.getByLabel('Password').fill('ana-portal-pass');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await heading(page, 'Webhooks in MKT');
    const cookies = await page.context().cookies();
    assert.deepEqual(cookies.map((cookie) => [cookie.name, cookie.httpOnly, cookie.sameSite]), [['plaza_portal', true, 'Strict']]);
    assert.equal(await page.evaluate(() => (globalThis as unknown as { document: { cookie: string } }).document.cookie), '', 'page scripts see no session cookie');

    await page.getByRole('link', { name: 'New webhook' }).click();
    await heading(page, 'New webhook');
    await page.getByLabel('Code').fill('erp-orders');
    await page.getByLabel('Name').fill('Orders to ERP');
    await page.getByLabel('Topic').selectOption('order/create');
    await page.getByLabel('Callback URL').fill('ftp://erp.example.com/hooks');
    await page.getByLabel('Headers').fill('Authorization: Bearer erp-token-123456\nX-Shop: north-1');
    await page.getByRole('button', { name: 'Create webhook' }).click();
    const urlError = page.locator('#f-callback_url-error');
    await urlError.waitFor();
    assert.match(await urlError.innerText(), /^Callback URL: the address must start with https:\/\//);
    assert.equal(await page.getByLabel('Callback URL').getAttribute('aria-invalid'), 'true');
    await checkPage(page, 'create-errors');
    await page.getByLabel('Callback URL').fill(receiver.url('/erp'));
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await heading(page, 'Webhook created');
    assert.match(await page.locator('#secret').innerText(), /^whsec_/);
    await checkPage(page, 'secret');

    receiver.fallback = (_request, response) => response.writeHead(500).end('ERP is down');
    await sendOrder('ORD-100');
    await page.getByRole('link', { name: 'Go to the webhook' }).click();
    await heading(page, 'Orders to ERP');
    await page.getByRole('link', { name: 'Delivery log' }).click();
    await heading(page, 'Deliveries of Orders to ERP');
    await reloadUntil(page, '500');
    await checkPage(page, 'deliveries');
    // Scannable: the entity and the topic of each delivery; filters are GET parameters (a link), kept by the entity links.
    const logRow = await page.locator('tbody tr').first().innerText();
    assert.match(logRow, /ORD-100/);
    assert.match(logRow, /order\/create/);
    await page.getByLabel('Entity id').fill('ORD-100');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/\/deliveries\?.*entity_id=ORD-100/);
    assert.equal(await page.getByLabel('Entity id').inputValue(), 'ORD-100', 'the filtered log shows its filter');
    assert.match(await page.getByRole('link', { name: 'ORD-100' }).first().getAttribute('href') ?? '', /\/deliveries\?entity_id=ORD-100$/);
    await page.getByRole('link', { name: /^#\d+$/ }).first().click();
    await heading(page, /^Delivery #\d+$/);
    await page.getByRole('heading', { name: 'Attempt 1: HTTP 500' }).waitFor();
    const headersTable = await page.locator('section table').first().innerText();
    assert.match(headersTable, /webhook-signature\s+v1,/);
    assert.match(headersTable, /webhook-id\s+msg_/);
    assert.match(headersTable, /authorization\s+Bear…\[masked\]/);
    assert.doesNotMatch(headersTable, /erp-token-123456/);
    assert.match(await page.locator('section[aria-labelledby^="attempt-"] pre').first().innerText(), /ERP is down/);
    // What was sent: the body, indented, the one the receiver got (same tokens), with a copy button.
    await page.getByRole('heading', { name: 'Notification body as sent' }).waitFor();
    const shownBody = await page.locator('#notification-body').innerText();
    assert.match(shownBody, /\n {2}"topic_path": "order\/MKT\/create"/);
    assert.deepEqual(JSON.parse(shownBody), JSON.parse(receiver.requests.at(-1)!.body.toString()));
    await page.getByRole('button', { name: 'Copy body' }).click();
    await page.locator('#notification-body-status').filter({ hasText: /Selected|Copied/ }).waitFor();
    await checkPage(page, 'delivery');

    receiver.fallback = (_request, response) => response.writeHead(200).end('ok');
    const before = receiver.requests.length;
    await page.getByRole('button', { name: 'Retry now' }).click();
    await page.getByText('Queued: the delivery is sent again now.').waitFor();
    await receiver.waitFor(before + 1);
    await reloadUntil(page, 'Attempt 2: HTTP 200');

    await page.goto(`${origin}/portal/MKT/webhooks/erp-orders/replay`);
    await heading(page, 'Replay deliveries of Orders to ERP');
    await page.getByLabel('succeeded').check();
    await page.getByRole('button', { name: 'Count matching deliveries' }).click();
    await page.getByText('deliveries match this filter').waitFor();
    assert.equal(await page.locator('.alert strong').innerText(), '1');
    assert.equal(receiver.requests.length, before + 1, 'a dry run sends nothing');
    await checkPage(page, 'replay');
    await page.getByRole('button', { name: 'Replay 1 deliveries' }).click();
    await page.getByText('1 deliveries queued again.').waitFor();
    await receiver.waitFor(before + 2);

    // A picture of health: attempts per hour by outcome and response time, SVG drawn by the server, the numbers in a table.
    await page.goto(`${origin}/portal/MKT/webhooks/erp-orders`);
    await page.getByRole('heading', { name: 'Health', level: 2 }).waitFor();
    assert.equal(await page.locator('svg.health-chart[role="img"]').count(), 4, 'attempts and response time, for 24 hours and 7 days');
    assert.equal(await page.getByRole('img', { name: 'Attempts per hour by outcome, last 24 hours' }).count(), 1);
    assert.equal(await page.getByRole('img', { name: 'Response time per 6 hours, last 7 days' }).count(), 1);
    const dayTotals = page.locator('details.health-numbers').first().locator('tfoot tr');
    // The replay's attempt is recorded just after the receiver got it.
    for (let tries = 0; !/Whole window\s+2\s+1\s+0\s/.test(await dayTotals.textContent() ?? '') && tries < 40; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      await page.reload();
    }
    await page.locator('details.health-numbers summary').first().click();
    assert.match(await dayTotals.innerText(), /^Whole window\s+2\s+1\s+0\s+\d+ ms\s+\d+ ms$/);
    assert.equal(await page.locator('details.health-numbers').first().locator('tbody tr').count(), 24);
    assert.equal(await page.locator('details.health-numbers').nth(1).locator('tbody tr').count(), 28);
    assert.ok(await page.locator('svg.health-chart rect').count() >= 2, 'bars drawn');
    assert.equal(await page.locator('script:not([src])').count(), 0, 'no chart script');
    await checkPage(page, 'webhook-health');
    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByText('Paused: events that arrive meanwhile are held').waitFor();
    await sendOrder('ORD-200');
    await page.goto(`${origin}/portal/MKT/webhooks/erp-orders`);
    assert.match(await page.locator('dl.facts').innerText(), /Held deliveries\s+1/);
    assert.equal(receiver.requests.length, before + 2, 'nothing goes out while paused');
    await checkPage(page, 'webhook-paused');
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.getByText('Resumed: held deliveries').waitFor();
    await receiver.waitFor(before + 3);
    assert.equal(JSON.parse(receiver.requests.at(-1)!.body.toString()).entity_id, 'ORD-200');

    await page.goto(`${origin}/portal/MKT/webhooks`);
    await heading(page, 'Webhooks in MKT');
    await checkPage(page, 'webhooks');
    await page.goto(`${origin}/portal/MKT/webhooks/erp-orders/history`);
    await checkPage(page, 'history');
    await page.goto(`${origin}/portal/overview`);
    await heading(page, 'All your webhooks');
    await checkPage(page, 'overview');
    await page.goto(`${origin}/portal/MKT/webhooks/erp-orders/edit`);
    await checkPage(page, 'edit');
    await page.getByRole('link', { name: 'Event catalogue' }).click();
    await heading(page, 'Event catalogue');
    assert.match(await page.locator('main').innerText(), /order\/<marketplace_code>\/status_changed\/entered_<status_code>/);
    for (const language of ['Node.js', 'Python', 'PHP', 'Go', 'Java']) await page.getByRole('heading', { name: language, exact: true }).waitFor();
    await checkPage(page, 'events');
    await page.context().close();
  });

  test('a portal link opens a session limited to its seller: others\' webhooks are invisible and their URLs 404', async () => {
    const created = await api(bruno, 'POST', '/v1/MKT/webhooks', { code: 'bruno-hook', name: 'Bruno orders', topic: 'order/create', callback_url: receiver.url('/bruno') });
    assert.equal(created.statusCode, 201, created.body);
    assert.equal((await api(ana, 'POST', '/v1/MKT/portal-links', { seller_id: 2 })).statusCode, 403, 'sellers cannot make links');
    const link = await app.inject({ method: 'POST', url: '/v1/MKT/portal-links', headers: { ...(await tokenOf(marketplaceUser)), host: new URL(origin).host }, payload: { seller_id: 2 } });
    assert.equal(link.statusCode, 201, link.body);
    const { url } = link.json() as { url: string };
    assert.ok(url.startsWith(`${origin}/portal/link/`));

    const page = await newPage();
    await page.goto(url);
    await heading(page, 'Open the webhook portal');
    await checkPage(page, 'link');
    await page.getByRole('button', { name: 'Open the portal' }).click();
    await heading(page, 'Webhooks in MKT');
    const list = await page.locator('main').innerText();
    assert.match(list, /Bruno orders/);
    assert.doesNotMatch(list, /Orders to ERP/);
    for (const path of ['/portal/MKT/webhooks/erp-orders', '/portal/MKT/webhooks/erp-orders/deliveries', '/portal/MKT/webhooks/erp-orders/replay']) {
      const response = await page.goto(`${origin}${path}`);
      assert.equal(response?.status(), 404, path);
    }
    await checkPage(page, 'not-found');

    const again = await newPage();
    await again.goto(url);
    await again.getByRole('button', { name: 'Open the portal' }).click();
    await heading(again, 'This portal link cannot be used');
    await again.context().close();
    await page.context().close();
  });

  test('no page broke the CSP, and axe checked every page', () => {
    assert.deepEqual(cspViolations, []);
    assert.deepEqual([...checked].sort(), ['create-errors', 'deliveries', 'delivery', 'edit', 'events', 'history', 'link', 'login', 'not-found', 'overview', 'replay', 'secret', 'webhook-health', 'webhook-paused', 'webhooks']);
  });
});
