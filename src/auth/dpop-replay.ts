import type { Queryable } from '../db/database.js';
import { invalidDpopProof, type VerifiedProof } from './dpop-proof.js';

/**
 * Records a proof as used, in every process at once (a unique insert): false when it was already
 * (a replay). Callers record only proofs that come with a good credential (a correct password, a
 * valid refresh token, a valid bound access token), so that nobody can fill the table without one;
 * each row leaves when its iat does not pass any more (pruneAuthRecords), which bounds the table by
 * the proofs of a window. In a transaction the insert also takes turns with a concurrent one of the
 * same proof: the second sees the first once it commits, and is the replay.
 */
export async function recordProof(db: Queryable, proof: VerifiedProof): Promise<boolean> {
  const { rowCount } = await db.query(proofInsertSql('$1', '$2'), [proof.replayKey, proof.replayUntil]);
  return rowCount === 1;
}

/**
 * recordProof's insert of the proof with key `key` valid until `until` (SQL expressions); with
 * `onlyIf`, the name of a CTE of a larger statement, only when that CTE has a row (a login's
 * session records its proof in its own statement, sessions.repository.ts).
 */
export function proofInsertSql(key: string, until: string, onlyIf?: string): string {
  return `INSERT INTO dpop_proofs (key, expires_at) ${onlyIf ? `SELECT ${key}, ${until} FROM ${onlyIf}` : `VALUES (${key}, ${until})`} ON CONFLICT (key) DO NOTHING`;
}

export const replayedProof = () => invalidDpopProof('This DPoP proof was already used: make a new one (a new jti) for every request.');
