import { createHash, randomBytes } from 'node:crypto';
import type { Queryable } from '../../db/database.js';
import { hashRecoveryCode, newRecoveryCode, normalizeRecoveryCode, RECOVERY_CODE_COUNT } from './recovery-codes.js';

export interface TotpRow {
  secret_encrypted: string;
  activated_at: Date | null;
  last_used_step: string | null;
}

export async function findTotp(db: Queryable, userId: number, lock = false): Promise<TotpRow | undefined> {
  const { rows } = await db.query<TotpRow>(
    `SELECT secret_encrypted, activated_at, last_used_step::text AS last_used_step FROM mfa_totp WHERE user_id = $1${lock ? ' FOR UPDATE' : ''}`,
    [userId],
  );
  return rows[0];
}

/** Which second factors a user has, in one round trip: an active TOTP secret, any passkey (mfa-login.ts). */
export async function secondFactorsOf(db: Queryable, userId: number): Promise<{ totp: boolean; passkey: boolean }> {
  const { rows } = await db.query<{ totp: boolean; passkey: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM mfa_totp WHERE user_id = $1 AND activated_at IS NOT NULL) AS totp,
            EXISTS (SELECT 1 FROM mfa_passkeys WHERE user_id = $1) AS passkey`,
    [userId],
    { prepare: true },
  );
  return rows[0]!;
}

/** A new, inactive secret; replaces an earlier inactive one (an abandoned enrolment), never an active one. */
export async function upsertPendingTotp(db: Queryable, userId: number, secretEncrypted: string, now: Date): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO mfa_totp (user_id, secret_encrypted, created_at) VALUES ($1, $2, $3)
     ON CONFLICT (user_id) DO UPDATE SET secret_encrypted = EXCLUDED.secret_encrypted, created_at = EXCLUDED.created_at, last_used_step = NULL
     WHERE mfa_totp.activated_at IS NULL`,
    [userId, secretEncrypted, now],
  );
  return rowCount === 1;
}

/**
 * Records `step` as used, only if it is later than the last used one: two requests with the same
 * code race here, and only one of them updates the row.
 */
export async function useTotpStep(db: Queryable, userId: number, step: number, activateAt?: Date): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE mfa_totp SET last_used_step = $2, activated_at = COALESCE(activated_at, $3)
     WHERE user_id = $1 AND (last_used_step IS NULL OR last_used_step < $2) AND ($3::timestamptz IS NULL OR activated_at IS NULL)`,
    [userId, step, activateAt ?? null],
  );
  return rowCount === 1;
}

/** Removes the authenticator and the recovery codes that went with it. */
export async function deleteSecondFactor(db: Queryable, userId: number): Promise<void> {
  await db.query(`DELETE FROM mfa_totp WHERE user_id = $1`, [userId]);
  await db.query(`DELETE FROM mfa_recovery_codes WHERE user_id = $1`, [userId]);
}

/** Ten new codes instead of every earlier one (used or not); the plain codes are returned once. */
export async function replaceRecoveryCodes(db: Queryable, userId: number, now: Date): Promise<string[]> {
  const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
  await db.query(`DELETE FROM mfa_recovery_codes WHERE user_id = $1`, [userId]);
  await db.query(
    `INSERT INTO mfa_recovery_codes (user_id, code_hash, created_at) SELECT $1, hash, $3 FROM unnest($2::bytea[]) AS hash`,
    [userId, codes.map((code) => hashRecoveryCode(normalizeRecoveryCode(code)!)), now],
  );
  return codes;
}

/** Marks an unused code used; false when it is not one of the user's unused codes (or another request took it first). */
export async function useRecoveryCode(db: Queryable, userId: number, code: string, now: Date): Promise<boolean> {
  const normalized = normalizeRecoveryCode(code);
  if (!normalized) return false;
  const { rowCount } = await db.query(
    `UPDATE mfa_recovery_codes SET used_at = $3 WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL`,
    [userId, hashRecoveryCode(normalized), now],
  );
  return rowCount === 1;
}

export async function unusedRecoveryCodes(db: Queryable, userId: number): Promise<number> {
  const { rows } = await db.query<{ count: number }>(`SELECT count(*)::int AS count FROM mfa_recovery_codes WHERE user_id = $1 AND used_at IS NULL`, [userId]);
  return rows[0]!.count;
}

export type ChallengePurpose = 'login' | 'enroll';

const hashToken = (token: string) => createHash('sha256').update(token).digest();
export const passwordCheckOf = (passwordHash: string) => createHash('sha256').update(passwordHash).digest();

/** A new mfa_token (returned once, stored hashed); the user's expired ones go. */
export async function createChallenge(db: Queryable, input: { userId: number; purpose: ChallengePurpose; passwordHash: string; now: Date; ttlSeconds: number }): Promise<string> {
  const token = `mfa_${randomBytes(32).toString('base64url')}`;
  await db.query(`DELETE FROM mfa_challenges WHERE user_id = $1 AND expires_at <= $2`, [input.userId, input.now]);
  await db.query(
    `INSERT INTO mfa_challenges (token_hash, user_id, purpose, password_check, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $5::timestamptz + make_interval(secs => $6))`,
    [hashToken(token), input.userId, input.purpose, passwordCheckOf(input.passwordHash), input.now, input.ttlSeconds],
  );
  return token;
}

export interface Challenge {
  user_id: number;
  purpose: ChallengePurpose;
  password_check: Buffer;
  failures: number;
}

/** The live challenge of a token, locked (a verify that succeeds deletes it: single use). */
export async function findChallenge(db: Queryable, token: string, purpose: ChallengePurpose, now: Date, lock = false): Promise<Challenge | undefined> {
  const { rows } = await db.query<Challenge>(
    `SELECT user_id, purpose, password_check, failures FROM mfa_challenges WHERE token_hash = $1 AND purpose = $2 AND expires_at > $3${lock ? ' FOR UPDATE' : ''}`,
    [hashToken(token), purpose, now],
  );
  return rows[0];
}

export async function deleteChallenge(db: Queryable, token: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM mfa_challenges WHERE token_hash = $1`, [hashToken(token)]);
  return rowCount === 1;
}

/** Counts a wrong code against the token; it is deleted at the `max`-th. */
export async function failChallenge(db: Queryable, token: string, max: number): Promise<void> {
  await db.query(`UPDATE mfa_challenges SET failures = failures + 1 WHERE token_hash = $1`, [hashToken(token)]);
  await db.query(`DELETE FROM mfa_challenges WHERE token_hash = $1 AND failures >= $2`, [hashToken(token), max]);
}
