import { login } from '../lib/api.js';
import { progress, withCleanup } from '../lib/cleanup.js';
import { dbTask } from '../lib/database.js';
import { runHelper } from '../lib/ipc.js';
import { Receivers } from '../lib/receivers.js';
import { met, ms, perSecond, seconds, times, type Scenario } from '../lib/scenario.js';
import { Service } from '../lib/service.js';
import { MARKETPLACE, SELLER_ID, seedTenant } from './common.js';

const RECEIVERS = 5;
/**
 * The second event's filter on every webhook: three conditions the bench's order meets (a range, a
 * set and an existence check), so that every webhook evaluates all of them and matches.
 */
const FILTER = { 'payload.order.status': { $in: ['APRO', 'PAID'] }, 'payload.order.products_subtotal': { $gt: 100 }, 'payload.order.invoice': { $exists: true } };

/**
 * 6: one event matching every one of 10 000 webhooks (inserted by SQL: the API's per-tenant limit
 * is far lower). The intake, timed by the client, against one INSERT … SELECT of the same rows.
 */
export const fanOut: Scenario = {
  id: '6',
  name: 'fan-out',
  run: (ctx) =>
    withCleanup(async (onExit) => {
      const { scale, engine } = ctx;
      const db = await ctx.newDatabase();
      const receivers = await Receivers.start(RECEIVERS);
      onExit(() => receivers.stop());
      const { users } = await seedTenant(db, 1, { webhooks: { count: scale.fanOut, topic: 'order/create', urls: receivers.urls } });
      progress(`ceiling: ${scale.fanOut} rows by one INSERT … SELECT`);
      const ceiling = await dbTask<{ medianMs: number; rows: number }>(db, 'bulk-insert-ceiling', { marketplace: MARKETPLACE, sellerId: SELLER_ID, repetitions: 3 });
      if (ceiling.rows !== scale.fanOut) throw new Error(`the ceiling inserted ${ceiling.rows} rows instead of ${scale.fanOut}`);

      const service = await Service.start(db);
      onExit(() => service.stop());
      const { token } = await login(service.baseUrl, users[0]!.username, users[0]!.password);
      progress(`one event to ${scale.fanOut} webhooks`);
      const intake = await runHelper<{ ms: number; deliveries: number }>('event-driver', 'one', {
        baseUrl: service.baseUrl,
        token,
        marketplace: MARKETPLACE,
        sellerId: SELLER_ID,
        reference: 'fan-out-1',
        warmups: 3,
      });
      if (intake.deliveries !== scale.fanOut) throw new Error(`the event matched ${intake.deliveries} webhooks instead of ${scale.fanOut}`);
      const delivered = await receivers.waitFor(scale.fanOut, { stallMs: scale.stallMs, budgetMs: scale.deliveryBudgetMs }, () => service.isRunning());

      // Issue 31: the same again with a filter on every webhook, evaluated in the fan-out.
      progress(`one event to ${scale.fanOut} webhooks, each with a filter`);
      const filters = await dbTask<{ rows: number }>(db, 'set-filters', { marketplace: MARKETPLACE, filter: FILTER });
      if (filters.rows !== scale.fanOut) throw new Error(`filters were set on ${filters.rows} webhooks instead of ${scale.fanOut}`);
      await receivers.reset();
      const filtered = await runHelper<{ ms: number; deliveries: number }>('event-driver', 'one', {
        baseUrl: service.baseUrl,
        token,
        marketplace: MARKETPLACE,
        sellerId: SELLER_ID,
        reference: 'fan-out-2',
        warmups: 1,
      });
      if (filtered.deliveries !== scale.fanOut) throw new Error(`the filtered event matched ${filtered.deliveries} webhooks instead of ${scale.fanOut}`);
      await receivers.waitFor(scale.fanOut, { stallMs: scale.stallMs, budgetMs: scale.deliveryBudgetMs }, () => service.isRunning());
      const ratio = intake.ms / ceiling.medianMs;
      const filteredRatio = filtered.ms / ceiling.medianMs;
      return [
        {
          scenario: `6 fan-out intake (${scale.fanOut} webhooks)`,
          database: engine,
          figure: ms(intake.ms),
          ceiling: ms(ceiling.medianMs),
          ratio: times(ratio),
          target: '≤ 3×',
          met: met(ratio <= 3),
        },
        {
          scenario: `6 fan-out intake, a filter on every webhook (${scale.fanOut} webhooks)`,
          database: engine,
          figure: ms(filtered.ms),
          ceiling: ms(ceiling.medianMs),
          ratio: times(filteredRatio),
          target: '≤ 3×',
          met: met(filteredRatio <= 3),
        },
        {
          scenario: '6 fan-out delivery',
          database: engine,
          figure: `${delivered.complete ? 'all' : `${delivered.unique} of`} ${scale.fanOut} in ${seconds(delivered.spanMs)} (${perSecond(delivered.perSecond)})`,
          ceiling: '—',
          ratio: '—',
          target: 'all delivered',
          met: met(delivered.complete),
        },
      ];
    }),
};
