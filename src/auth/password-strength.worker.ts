import { parentPort } from 'node:worker_threads';
import { judgePassword } from './password-estimator.js';

/** The estimator's thread: one request at a time, answered with the id it came with. */
parentPort?.on('message', (request: { id: number; password: string; userInputs: string[] }) => {
  judgePassword(request.password, request.userInputs).then(
    (verdict) => parentPort?.postMessage({ id: request.id, verdict }),
    (error: unknown) => parentPort?.postMessage({ id: request.id, error: error instanceof Error ? error.message : String(error) }),
  );
});
