import type { Config } from '../config.js';

/*
 * Body limits per route, so that nobody can make Plaza read (and parse) more than a route needs.
 * Bodies are read only after authentication (routes authenticate in onRequest), so the larger
 * limits are open to holders of a token only.
 */

/**
 * Login, refresh, password change and the second factor's steps, in the API and in the portal's
 * sign-in forms (read before anyone is signed in): their longest valid body, a user name (≤ 200 characters)
 * and a password (≤ 1024), or two passwords, fits even with every character written as JSON
 * escapes, as some clients send non-ASCII text: a character outside the Basic Multilingual Plane
 * (an emoji) is two `\uXXXX`, 12 bytes, so two passwords take 24 KiB. Never above BODY_LIMIT_BYTES.
 */
export const credentialsBodyLimit = (config: Config): number => Math.min(32 * 1024, config.BODY_LIMIT_BYTES);

/**
 * Every other route but event intake (webhook definitions: ≤ 8 KiB of headers, a URL, a name;
 * retries and replays: a few fields), the portal's forms included, never above BODY_LIMIT_BYTES.
 */
export const defaultBodyLimit = (config: Config): number => Math.min(64 * 1024, config.BODY_LIMIT_BYTES);

/** Event intake (POST /v1/{marketplace_code}/events): publications and orders, BODY_LIMIT_BYTES. */
export const eventBodyLimit = (config: Config): number => config.BODY_LIMIT_BYTES;
