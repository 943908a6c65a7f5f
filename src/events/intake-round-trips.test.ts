import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestContext } from '../testing/test-app.js';
import { recordRoundTrips } from '../testing/round-trips.js';
import { insertWebhook, postEvent, publication, sampleEvent, seedWorld, type World } from '../testing/events.js';

/**
 * The round trips of an event's intake (issue 29, docs/events.md, "Transactional outbox"): at 200 events/s
 * the intake shares the process and the database with the deliveries, so each round trip is CPU
 * taken from them (scenario 5) and caps the intake rate (scenarios 4 and 12). A statement more fails
 * here, on purpose; if one is needed, change the list here and the explanation there, with the reason.
 */
describe('round trips of an intake', () => {
  let ctx: TestContext;
  let world: World;
  before(async () => {
    ctx = await createTestApp();
    world = await seedWorld(ctx);
    await insertWebhook(ctx.db, { topic: 'publication/update' });
    await insertWebhook(ctx.db, { topic: 'publication/update' });
  });
  after(() => ctx.close());

  const send = async (eventId: string, stock: number, entity = 101) => {
    let deliveries = -1;
    const statements = await recordRoundTrips(async () => {
      const response = await postEvent(ctx, world.headers.seller1, sampleEvent('publication/update', world, { event_id: eventId, entity_id: entity, publication: publication(entity, { stock }) }));
      assert.equal(response.statusCode, 202, response.body);
      deliveries = (JSON.parse(response.body) as { deliveries: number }).deliveries;
    });
    assert.equal(deliveries, 2);
    return statements.map((sql) => sql.split(' ').slice(0, 2).join(' '));
  };

  test('an update of a known entity to two webhooks: the checks, then BEGIN, event, snapshot, fan-out, COMMIT', async () => {
    await send('first', 1);
    assert.deepEqual(await send('second', 2), [
      'SELECT c.*,', // the caller's tenant, marketplace access, the event_id's earlier use, the seller's connection, the filters
      'BEGIN',
      'INSERT INTO', // the event
      'UPDATE entity_snapshots', // the snapshot swapped, the previous one returned
      'WITH matched', // deliveries, counters, count and body, wake-up
      'COMMIT',
    ]);
  });

  test('the first event of an entity inserts its snapshot after finding none to update', async () => {
    const statements = await send('new-entity', 3, 102);
    assert.deepEqual(statements, ['SELECT c.*,', 'BEGIN', 'INSERT INTO', 'UPDATE entity_snapshots', 'INSERT INTO', 'WITH matched', 'COMMIT']);
  });
});
