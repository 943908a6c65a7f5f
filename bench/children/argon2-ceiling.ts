import { hash, verify } from '@node-rs/argon2';
import { PASSWORD_PARAMS } from '../../src/auth/passwords.js';
import { serveRequests } from '../lib/ipc.js';

/** Ceiling of scenario 2: argon2id verifications of correct passwords, `parallelism` at a time, the service's parameters; and their CPU each. */
serveRequests({
  run: async (job: { parallelism: number; warmupMs: number; durationMs: number }) => {
    const passwords = Array.from({ length: 8 }, (_, i) => `ceiling-user-${i}-password`);
    const hashes = await Promise.all(passwords.map((password) => hash(password, PASSWORD_PARAMS)));
    let counting = false;
    let stop = false;
    let verified = 0;
    const loops = Array.from({ length: job.parallelism }, async (_, loop) => {
      for (let i = loop; !stop; i++) {
        if (!(await verify(hashes[i % hashes.length]!, passwords[i % passwords.length]!))) throw new Error('verify failed');
        if (counting) verified++;
      }
    });
    await new Promise((resolve) => setTimeout(resolve, job.warmupMs));
    counting = true;
    const started = performance.now();
    const cpuFrom = process.cpuUsage();
    await new Promise((resolve) => setTimeout(resolve, job.durationMs));
    counting = false;
    const elapsed = performance.now() - started;
    // Every thread of the process: the verifications run on libuv's.
    const cpu = process.cpuUsage(cpuFrom);
    stop = true;
    await Promise.all(loops);
    return { perSecond: (verified / elapsed) * 1000, cpuMicrosPerVerify: Math.round((cpu.user + cpu.system) / verified) };
  },
});
