import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { buildApp, type App } from '../app.js';
import { totpAt } from '../auth/mfa/totp.js';
import { ManualClock } from '../clock.js';
import { loadConfig } from '../config.js';
import { generateKeys } from '../keys.js';
import { seedConnection, seedUser } from '../testing/fixtures.js';
import { assertNoSidewaysScroll } from '../testing/narrow-screen.js';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.js';

/**
 * The portal's second factor in real Chromium: enrolment with the QR image, sign-in with a code,
 * a recovery code, and a role that requires a second factor. The app runs on a manual clock, so
 * that the test moves to the next TOTP step instead of waiting 30 s (a code is good once).
 */
const CHROMIUM = process.env.PLAZA_CHROMIUM ?? '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `Chromium not found at ${CHROMIUM}: install it (apt-get install -y chromium) to run the browser tests`;

describe('portal second factor in Chromium', { skip }, () => {
  let app: App;
  let db: TestDatabase;
  let browser: Browser;
  let origin: string;
  const clock = new ManualClock(new Date());
  const axeSource = readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  const problems: string[] = [];

  before(async () => {
    const config = loadConfig({ LOG_LEVEL: 'silent', MFA_REQUIRED_ROLES: 'admin' });
    [db] = await Promise.all([createTestDatabase()]);
    await seedConnection(db, 1, 'MKT');
    await seedUser(db, { username: 'carla', password: 'carla-portal-pass', sellerId: 1 });
    await seedUser(db, { username: 'root', password: 'root-portal-pass', role: 'admin' });
    await seedUser(db, { username: 'dora', password: 'dora-portal-pass', sellerId: 1 });
    app = await buildApp({ config, db, keys: await generateKeys(), clock, logger: false });
    await app.listen({ host: '127.0.0.1', port: 0 });
    origin = `http://localhost:${(app.server.address() as AddressInfo).port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  });
  after(async () => {
    await browser?.close();
    await app?.close();
    await db?.close();
  });

  async function newPage(): Promise<Page> {
    const page = await (await browser.newContext()).newPage();
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    return page;
  }

  async function checkPage(page: Page, name: string): Promise<void> {
    await page.evaluate(await axeSource);
    const violations = await page.evaluate(async () => {
      const result = await (globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string }[] }> } }).axe.run();
      return result.violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical').map((violation) => violation.id);
    });
    assert.deepEqual(violations, [], `axe on ${name}`);
    await assertNoSidewaysScroll(page, name);
  }

  const heading = (page: Page, name: string | RegExp) => page.getByRole('heading', { level: 1, name }).waitFor();
  const nextStep = () => clock.advanceSeconds(30);

  async function signIn(page: Page, username: string, password: string): Promise<void> {
    await page.goto(`${origin}/portal/login`);
    await page.getByLabel('User name').fill(username);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  /** The QR image is a real, decoded PNG drawn by Plaza (no outside service). */
  async function assertQrImage(page: Page): Promise<void> {
    const qr = page.getByRole('img', { name: 'QR code of your authenticator key' });
    await qr.waitFor();
    assert.match((await qr.getAttribute('src')) ?? '', /^data:image\/png;base64,/);
    assert.ok(await qr.evaluate((img) => (img as unknown as { complete: boolean; naturalWidth: number }).complete && (img as unknown as { naturalWidth: number }).naturalWidth > 100));
  }

  test('a seller turns on an authenticator app, then signs in with a code and with a recovery code', async () => {
    const page = await newPage();
    await signIn(page, 'carla', 'carla-portal-pass');
    await heading(page, 'Webhooks in MKT');
    await page.getByRole('link', { name: 'Sign-in security' }).click();
    await heading(page, 'Sign-in security');
    await checkPage(page, 'security-off');
    await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
    await heading(page, 'Set up an authenticator app');
    await assertQrImage(page);
    await checkPage(page, 'enrol');
    const secret = (await page.locator('#totp-secret').textContent())!.trim();
    assert.match(secret, /^[A-Z2-7]{32}$/);
    await page.getByLabel('Code').fill(totpAt(secret, clock.now()) === '000000' ? '111111' : '000000');
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByText('is not the current code').waitFor();
    // A failed activation shows a new secret: take the one on the page now.
    const fresh = (await page.locator('#totp-secret').textContent())!.trim();
    await page.getByLabel('Code').fill(totpAt(fresh, clock.now()));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await heading(page, 'Your recovery codes');
    await checkPage(page, 'recovery-codes');
    const codes = (await page.locator('#recovery-codes').textContent())!.trim().split('\n');
    assert.equal(codes.length, 10);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await heading(page, 'Sign in');

    nextStep();
    await signIn(page, 'carla', 'carla-portal-pass');
    await heading(page, 'Enter your code');
    await checkPage(page, 'mfa-code');
    await page.getByLabel('Code').fill('123 456' === totpAt(fresh, clock.now()) ? '654321' : '123456');
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByText('The code is wrong or already used.').waitFor();
    await page.getByLabel('Code').fill(totpAt(fresh, clock.now()));
    await page.getByRole('button', { name: 'Verify' }).click();
    await heading(page, 'Webhooks in MKT');
    await page.getByRole('button', { name: 'Sign out' }).click();

    // The same code again (same step) is refused; a recovery code gets in.
    await signIn(page, 'carla', 'carla-portal-pass');
    await page.getByLabel('Code').fill(totpAt(fresh, clock.now()));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByText('The code is wrong or already used.').waitFor();
    await page.getByLabel('Code').fill(codes[0]!);
    await page.getByRole('button', { name: 'Verify' }).click();
    await heading(page, 'Webhooks in MKT');

    // Turn it off with a current code.
    nextStep();
    await page.goto(`${origin}/portal/account`);
    await page.getByLabel('Code').fill(totpAt(fresh, clock.now()));
    await page.getByRole('button', { name: 'Turn off' }).click();
    await page.getByText('The authenticator app is off').waitFor();
  });

  test('an admin whose role requires a second factor enrols at sign-in, then signs in with a code', async () => {
    const page = await newPage();
    await signIn(page, 'root', 'root-portal-pass');
    await heading(page, 'Set up your second factor');
    await assertQrImage(page);
    const secret = (await page.locator('#totp-secret').textContent())!.trim();
    await page.getByLabel('Code').fill(totpAt(secret, clock.now()));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await heading(page, 'Your recovery codes');
    await page.getByRole('link', { name: 'Now sign in with your code' }).click();
    nextStep();
    await signIn(page, 'root', 'root-portal-pass');
    await heading(page, 'Enter your code');
    await page.getByLabel('Code').fill(totpAt(secret, clock.now()));
    await page.getByRole('button', { name: 'Verify' }).click();
    await heading(page, /Choose a marketplace|Webhooks in MKT/);
  });

  test('a passkey registered with Chromium\'s virtual authenticator signs in on its own, and stands in for the code', async () => {
    const page = await newPage();
    // A platform authenticator with user verification (as a phone or laptop would be), over the DevTools protocol.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
    });
    await signIn(page, 'dora', 'dora-portal-pass');
    await heading(page, 'Webhooks in MKT');
    await page.goto(`${origin}/portal/account`);
    await page.getByLabel('Name of the new passkey').fill('Laptop');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByRole('cell', { name: 'Laptop', exact: true }).waitFor();
    await checkPage(page, 'security-passkey');
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    assert.equal(credentials.length, 1);
    assert.equal(credentials[0]!.isResidentCredential, true);
    await page.getByRole('button', { name: 'Sign out' }).click();

    // Sign in with the passkey alone: no user name, no password.
    await heading(page, 'Sign in');
    await page.getByRole('button', { name: 'Use a passkey', exact: true }).click();
    await heading(page, 'Webhooks in MKT');
    await page.getByRole('button', { name: 'Sign out' }).click();

    // A passkey is a second factor: the password alone no longer signs in, the passkey finishes it.
    await page.goto(`${origin}/portal/login`);
    await signIn(page, 'dora', 'dora-portal-pass');
    await heading(page, 'Enter your code');
    await page.getByRole('button', { name: 'Use a passkey instead' }).click();
    await heading(page, 'Webhooks in MKT');

    // With an authenticator app too, the code page takes either.
    await page.goto(`${origin}/portal/account`);
    await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
    const secret = (await page.locator('#totp-secret').textContent())!.trim();
    await page.getByLabel('Code').fill(totpAt(secret, clock.now()));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await heading(page, 'Your recovery codes');
    await page.goto(`${origin}/portal/account`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, 'dora', 'dora-portal-pass');
    await heading(page, 'Enter your code');
    await page.getByRole('button', { name: 'Use a passkey instead' }).click();
    await heading(page, 'Webhooks in MKT');
    const { rows } = await db.query<{ detail: unknown }>(`SELECT detail FROM auth_events WHERE type = 'login_succeeded' AND username = 'dora' ORDER BY id DESC LIMIT 1`);
    assert.deepEqual(rows[0]!.detail, { second_factor: 'passkey' });

    // Without the authenticator, the passkey button fails with a message, and nothing signs in.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await cdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId });
    await page.getByRole('button', { name: 'Use a passkey', exact: true }).click();
    await page.locator('#passkey-status').filter({ hasText: /./ }).waitFor();
    await heading(page, 'Sign in');
  });

  test('no page broke the CSP', () => {
    assert.deepEqual(problems, []);
  });
});
