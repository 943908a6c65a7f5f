import type { Queryable } from '../../db/database.js';

export interface PasskeyRow {
  id: string;
  user_id: number;
  public_key: Buffer;
  counter: string;
  transports: string[];
  name: string;
  created_at: Date;
  last_used_at: Date | null;
}

export async function passkeysOf(db: Queryable, userId: number): Promise<PasskeyRow[]> {
  const { rows } = await db.query<PasskeyRow>(`SELECT * FROM mfa_passkeys WHERE user_id = $1 ORDER BY created_at, id`, [userId]);
  return rows;
}

export async function findPasskey(db: Queryable, id: string): Promise<PasskeyRow | undefined> {
  const { rows } = await db.query<PasskeyRow>(`SELECT * FROM mfa_passkeys WHERE id = $1`, [id]);
  return rows[0];
}

export async function insertPasskey(db: Queryable, row: { id: string; userId: number; publicKey: Uint8Array; counter: number; transports: string[]; name: string; now: Date }): Promise<void> {
  await db.query(
    `INSERT INTO mfa_passkeys (id, user_id, public_key, counter, transports, name, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [row.id, row.userId, Buffer.from(row.publicKey), row.counter, row.transports, row.name, row.now],
  );
}

/** Only forwards: of two sign-ins with one counter value, the second finds nothing to update. */
export async function usePasskey(db: Queryable, id: string, counter: number, now: Date): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE mfa_passkeys SET counter = $2, last_used_at = $3 WHERE id = $1 AND (counter < $2 OR (counter = 0 AND $2 = 0))`,
    [id, counter, now],
  );
  return rowCount === 1;
}

export async function deletePasskey(db: Queryable, userId: number, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM mfa_passkeys WHERE user_id = $1 AND id = $2`, [userId, id]);
  return rowCount === 1;
}

export async function saveWebauthnChallenge(db: Queryable, input: { challenge: string; userId: number | null; purpose: 'register' | 'sign_in'; now: Date; ttlSeconds: number }): Promise<void> {
  // Expired ones go first: a sign-in's options need no account, so this table must not grow with them.
  await db.query(`DELETE FROM webauthn_challenges WHERE expires_at <= $1`, [input.now]);
  await db.query(
    `INSERT INTO webauthn_challenges (challenge, user_id, purpose, expires_at) VALUES ($1, $2, $3, $4::timestamptz + make_interval(secs => $5))`,
    [input.challenge, input.userId, input.purpose, input.now, input.ttlSeconds],
  );
}

/** Takes a live challenge (single use): its user, or undefined when unknown, used or expired. */
export async function takeWebauthnChallenge(db: Queryable, challenge: string, purpose: 'register' | 'sign_in', now: Date): Promise<{ user_id: number | null } | undefined> {
  const { rows } = await db.query<{ user_id: number | null }>(
    `DELETE FROM webauthn_challenges WHERE challenge = $1 AND purpose = $2 AND expires_at > $3 RETURNING user_id`,
    [challenge, purpose, now],
  );
  return rows[0];
}
