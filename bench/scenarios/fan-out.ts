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
      const ratio = intake.ms / ceiling.medianMs;
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
