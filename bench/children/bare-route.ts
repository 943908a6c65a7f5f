import Fastify from 'fastify';
import { serveRequests } from '../lib/ipc.js';

/** Ceiling of scenario 1: a bare Fastify route answering the same JSON: no auth, no database, no logs. */
serveRequests({
  start: async (job: { path: string; json: string }) => {
    const app = Fastify({ logger: false });
    app.get(job.path, async (_request, reply) => reply.header('content-type', 'application/json; charset=utf-8').send(job.json));
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    if (typeof address !== 'object' || !address) throw new Error('no address');
    return `http://127.0.0.1:${address.port}`;
  },
});
