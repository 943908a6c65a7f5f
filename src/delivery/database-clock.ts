// The database clock lives in src/db/ (nothing in it is the delivery's own); this re-export keeps
// the delivery engine's imports as they were until its files move.
export { clockOffsetMs, dbNow } from '../db/database-clock.js';
