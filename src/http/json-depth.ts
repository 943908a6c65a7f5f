import type { FastifyRequest } from 'fastify';
import { AppError } from './errors.js';

/**
 * Deepest nesting of arrays and objects a body may have. Real payloads (publications, orders) stay
 * under ten levels; thousands of levels only serve to exhaust the stack of whatever walks the body
 * next (validation, hashing, serialising), so they are refused before any of it runs.
 */
export const MAX_JSON_DEPTH = 64;

/** Whether a parsed JSON value nests deeper than `limit`, found without recursion. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const pending: [unknown, number][] = [[value, 1]];
  while (pending.length > 0) {
    const [current, depth] = pending.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (depth > limit) return true;
    for (const child of Object.values(current)) pending.push([child, depth + 1]);
  }
  return false;
}

/** A preValidation hook for every route. */
export async function refuseDeepBodies(request: FastifyRequest): Promise<void> {
  if (request.body !== undefined && nestsDeeperThan(request.body, MAX_JSON_DEPTH)) {
    const message = `is nested deeper than ${MAX_JSON_DEPTH} levels`;
    throw new AppError('validation_failed', `body ${message}`, { errors: [{ field: 'body', message }] });
  }
}
