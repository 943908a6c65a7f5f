import { spawn } from 'node:child_process';
import { progress, withCleanup } from '../lib/cleanup.js';
import { wallNow } from '../lib/processes.js';
import { met, ms, seconds, times, type Scenario } from '../lib/scenario.js';
import { Service } from '../lib/service.js';
import { median } from '../lib/stats.js';
import { seedTenant } from './common.js';

/** Time for `node -e ""` to start and exit: what any Node process pays on this machine right now. */
async function bareNodeMs(): Promise<number> {
  const started = wallNow();
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', () => resolve());
  });
  return wallNow() - started;
}

/** 9: from spawning `plaza serve` to the first /readyz 200, on a database that already exists (started once before). */
export const startUp: Scenario = {
  id: '9',
  name: 'start-up',
  run: (ctx) =>
    withCleanup(async (onExit) => {
      const { scale, engine } = ctx;
      const db = await ctx.newDatabase();
      await seedTenant(db, 1);
      const first = await Service.start(db);
      onExit(() => first.stop());
      await first.stop();
      progress(`${scale.startups} starts`);
      const starts: number[] = [];
      for (let i = 0; i < scale.startups; i++) {
        const service = await Service.start(db);
        onExit(() => service.stop());
        starts.push(service.readyAfterMs!);
        await service.stop();
      }
      const bare: number[] = [];
      for (let i = 0; i < scale.startups; i++) bare.push(await bareNodeMs());
      const figure = median(starts);
      const ceiling = median(bare);
      return [
        { scenario: '9 start-up to /readyz', database: engine, figure: seconds(figure), ceiling: ms(ceiling), ratio: times(figure / ceiling), target: '≤ 1.5 s', met: met(figure <= 1500) },
      ];
    }),
};
