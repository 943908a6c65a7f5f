import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parseNetworks } from '../../net/address-policy.js';
import { accessTokenFor, bearer, seedUser } from '../../testing/fixtures.js';
import { createTestApp, type TestContext } from '../../testing/test-app.js';
import { createDeliverer, deliverDue } from './deliver.js';
import { deliveryRow, seedDelivery, seedWebhook, attemptRows } from '../../testing/deliveries.js';
import { Receiver } from '../../testing/receiver.js';
import { sendNotification } from './sender.js';
import { createGuardedAgent, vetHost } from './ssrf-guard.js';

const notification = (url: string) => ({ url, messageId: 'msg_ssrf', body: '{}', keys: [Buffer.from('k')], headers: {}, timestampSeconds: 0 });

/** Callback URLs that must never be reached when no network is allowed (WEBHOOK_ALLOWED_NETWORKS empty). */
const REFUSED: [string, RegExp][] = [
  ['http://127.0.0.1:9/', /blocked address 127\.0\.0\.1 \(loopback\)/],
  ['http://10.0.0.1/', /blocked address 10\.0\.0\.1 \(private\)/],
  ['http://172.16.5.4/', /\(private\)/],
  ['http://172.31.255.255/', /\(private\)/],
  ['http://192.168.1.1/', /\(private\)/],
  ['http://169.254.169.254/latest/meta-data/', /blocked address 169\.254\.169\.254 \(linkLocal\)/],
  ['http://100.64.0.1/', /\(carrierGradeNat\)/],
  ['http://0.0.0.0/', /\(unspecified\)/],
  ['http://[::1]/', /blocked address ::1 \(loopback\)/],
  ['http://[::ffff:127.0.0.1]/', /blocked address ::ffff:7f00:1 \(loopback\)/],
  ['http://[::ffff:169.254.169.254]/', /\(linkLocal\)/],
  ['http://[64:ff9b::a00:1]/', /\(private\)/],
  ['http://[fe80::1]/', /\(linkLocal\)/],
  ['http://[fc00::1]/', /\(uniqueLocal\)/],
  ['http://[::]/', /\(unspecified\)/],
  ['http://224.0.0.1/', /\(multicast\)/],
  ['http://255.255.255.255/', /\(broadcast\)/],
  ['http://240.0.0.1/', /\(reserved\)/],
  ['http://2130706433/', /blocked address 127\.0\.0\.1/],
  ['http://0x7f.1/', /blocked address 127\.0\.0\.1/],
  ['http://017700000001/', /blocked address 127\.0\.0\.1/],
  ['http://127.1/', /blocked address 127\.0\.0\.1/],
  ['https://10.1.2.3:8443/', /\(private\)/],
  ['http://localhost:9/', /blocked address .* for localhost/],
];

describe('SSRF guard at connect time', () => {
  const agent = createGuardedAgent({ allowed: [], connectTimeoutMs: 1000, responseTimeoutMs: 2000 });
  after(() => agent.close());

  for (const [url, reason] of REFUSED) {
    test(`refuses ${url}, telling the tenant only destination_blocked`, async () => {
      const result = await sendNotification(agent, notification(url), 3000);
      assert.equal(result.statusCode, null);
      assert.equal(result.error, 'destination_blocked');
      assert.match(result.detail ?? '', reason);
    });
  }

  test('a name resolving to one private address among public ones is refused', async () => {
    await assert.rejects(vetHost('mixed.example', [], async () => ['93.184.216.34', '10.0.0.7']), /blocked address 10\.0\.0\.7 \(private\) for mixed\.example/);
    assert.equal(await vetHost('public.example', [], async () => ['93.184.216.34']), '93.184.216.34');
  });

  test('a name that does not resolve is dns_failure for the tenant, the resolver error in the detail', async () => {
    const failing = createGuardedAgent({ allowed: [], connectTimeoutMs: 1000, responseTimeoutMs: 1000, resolve: async () => {
      throw Object.assign(new Error('x'), { code: 'ENOTFOUND' });
    } });
    try {
      const result = await sendNotification(failing, notification('http://db.internal.corp/'), 2000);
      assert.equal(result.error, 'dns_failure');
      assert.match(result.detail ?? '', /cannot resolve db\.internal\.corp: ENOTFOUND/);
    } finally {
      await failing.close();
    }
  });

  test('vetHost names the resolver failure (for the log)', async () => {
    await assert.rejects(vetHost('nope.invalid', [], async () => {
      throw Object.assign(new Error('x'), { code: 'ENOTFOUND' });
    }), /cannot resolve nope\.invalid: ENOTFOUND/);
  });

  test('WEBHOOK_ALLOWED_NETWORKS opens exactly the chosen ranges', async () => {
    const allowed = parseNetworks('127.0.0.0/8');
    assert.equal(await vetHost('127.0.0.1', allowed), '127.0.0.1');
    assert.equal(await vetHost('[::ffff:127.0.0.1]', allowed), '::ffff:127.0.0.1');
    await assert.rejects(vetHost('10.0.0.1', allowed), /private/);
    await assert.rejects(vetHost('::1', allowed), /loopback/);
  });

  test('WEBHOOK_ALLOWED_NETWORKS takes canonical ranges only: an octal, hex or short IPv4 form would open another range than the one written', () => {
    assert.deepEqual(parseNetworks('192.168.10.0/24, ::1/128, ::ffff:127.0.0.1/128, fd00::/8, 0.0.0.0/0').map(([address, bits]) => `${address.toString()}/${bits}`),
      ['192.168.10.0/24', '::1/128', '::ffff:7f00:1/128', 'fd00::/8', '0.0.0.0/0']);
    // ipaddr.js reads 192.168.010.0 as 192.168.8.0 (octal): refused, not silently another /24.
    for (const entry of ['192.168.010.0/24', '010.0.0.0/8', '0x7f.0.0.0/8', '127.1/32', '2130706433/32', 'fe80::1%eth0/64', '::ffff:010.0.0.1/128', '127.0.0.1/08', '127.0.0.1/33', '127.0.0.1']) {
      assert.throws(() => parseNetworks(entry), new RegExp(`"${entry.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}" is not a CIDR range written as four decimal octets`), entry);
    }
  });

  test('connects to the vetted address itself and keeps the hostname in Host (no second lookup: DNS rebinding fails)', async () => {
    const receiver = await Receiver.start();
    let lookups = 0;
    // The first answer is allowed, every later one would point elsewhere: only one lookup may happen per connection.
    const rebinding = createGuardedAgent({
      allowed: parseNetworks('127.0.0.1/32'),
      connectTimeoutMs: 1000,
      responseTimeoutMs: 2000,
      resolve: async () => (++lookups === 1 ? ['127.0.0.1'] : ['10.0.0.1']),
    });
    try {
      const result = await sendNotification(rebinding, notification(`http://rebind.test:${receiver.port}/x`), 3000);
      assert.equal(result.statusCode, 200);
      assert.equal(lookups, 1);
      assert.equal(receiver.requests[0]!.headers.host, `rebind.test:${receiver.port}`);
    } finally {
      await rebinding.close();
      await receiver.close();
    }
  });

  test('only http and https callbacks are sent', async () => {
    for (const url of ['file:///etc/passwd', 'ftp://example.com/', 'gopher://127.0.0.1:25/']) {
      const result = await sendNotification(agent, notification(url), 1000);
      assert.match(result.error ?? '', /unsupported URL scheme/);
    }
  });
});

describe('SSRF guard in the worker', () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestApp({ WEBHOOK_ALLOWED_NETWORKS: '' });
  });
  after(() => ctx.close());

  test('a refused address is recorded as a failed attempt with a generic code, and retried', async () => {
    const receiver = await Receiver.start();
    const deliverer = createDeliverer(ctx);
    try {
      const webhook = await seedWebhook(ctx.db, ctx.keys, { callbackUrl: receiver.url() });
      const delivery = await seedDelivery(ctx.db, webhook, { now: ctx.clock.now() });
      const [result] = await deliverDue(deliverer);
      assert.equal(result!.outcome, 'retry');
      assert.equal(receiver.requests.length, 0);
      const row = await deliveryRow(ctx.db, delivery.id);
      assert.equal(row.last_error, 'destination_blocked');
      assert.equal((await attemptRows(ctx.db, delivery.id))[0]!.error, 'destination_blocked');
      // What the tenant reads through the API says no more.
      const listed = await ctx.app.inject({ url: `/v1/${webhook.marketplaceCode}/webhooks/${webhook.code}/deliveries/${delivery.id}`, headers: bearer(await accessTokenFor(ctx, await seedUser(ctx.db, { role: 'admin' }))) });
      assert.equal(listed.statusCode, 200);
      assert.doesNotMatch(listed.body, /127\.0\.0\.1|loopback/);
      assert.match(listed.body, /destination_blocked/);
    } finally {
      await deliverer.close();
      await receiver.close();
    }
  });
});
