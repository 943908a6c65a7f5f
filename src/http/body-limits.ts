import type { Config } from '../config.js';

/**
 * Body limits per route, so that nobody can make Plaza read (and parse) more than a route needs.
 * Bodies are read only after authentication (routes authenticate in onRequest), so the larger
 * limits are open to holders of a token only.
 */

/** Login and refresh: a user name (≤ 200 characters) and a password or token (≤ 1024) fit many times over. */
export const CREDENTIALS_BODY_LIMIT_BYTES = 4096;

/**
 * Every other route but event intake (webhook definitions: ≤ 8 KiB of headers, a URL, a name;
 * retries and replays: a few fields), never above BODY_LIMIT_BYTES.
 */
export const defaultBodyLimit = (config: Config): number => Math.min(64 * 1024, config.BODY_LIMIT_BYTES);

/** Event intake (POST /v1/{marketplace_code}/events): publications and orders, BODY_LIMIT_BYTES. */
export const eventBodyLimit = (config: Config): number => config.BODY_LIMIT_BYTES;
