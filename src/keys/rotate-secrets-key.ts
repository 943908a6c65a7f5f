import type { Database } from '../db/database.js';
import { decryptSecret, encryptSecret } from './secret-box.js';
import { sealPlainHeaders } from './header-box.js';
import { derivedKeys } from '../keys.js';
import { jwtKeyEncryptionKey as jwtEncryptionKey, lockJwtKeys } from './jwt-key-ring.js';
import { fingerprintOf, sealCheck, verifySecretsKey, type SecretsKey } from './secrets-key.js';

/**
 * Re-encrypts every secret the database holds under a new master key, in one transaction: the
 * webhook secrets (current and previous), the JWT private keys, the users' TOTP secrets, and the check value. Either all
 * of it moves to the new key or nothing does. Returns how many rows moved.
 */
export async function rotateSecretsKey(db: Database, current: SecretsKey, next: Buffer, now: Date): Promise<{ webhooks: number; jwtKeys: number; totpSecrets: number }> {
  const from = derivedKeys(current.key).webhookSecretsKey;
  const to = derivedKeys(next).webhookSecretsKey;
  return db.transaction(async (tx) => {
    // The lock of JWT rotations, and the check row locked: two rotations cannot interleave.
    await lockJwtKeys(tx);
    await tx.query(`SELECT 1 FROM secrets_key_check FOR UPDATE`);
    await verifySecretsKey(tx, current, from, now);
    // Header values still in plain text are sealed first, so that all of them end under the new key.
    await sealPlainHeaders(tx, from);
    const webhooks = await tx.query<{ id: number; secret_encrypted: string; previous_secret_encrypted: string | null; headers_encrypted: string | null }>(
      `SELECT id, secret_encrypted, previous_secret_encrypted, headers_encrypted FROM webhooks ORDER BY id FOR UPDATE`,
    );
    const move = (stored: string) => encryptSecret(to, decryptSecret(from, stored));
    for (const row of webhooks.rows) {
      await tx.query(`UPDATE webhooks SET secret_encrypted = $2, previous_secret_encrypted = $3, headers_encrypted = $4 WHERE id = $1`, [
        row.id,
        move(row.secret_encrypted),
        row.previous_secret_encrypted === null ? null : move(row.previous_secret_encrypted),
        row.headers_encrypted === null ? null : move(row.headers_encrypted),
      ]);
    }
    const jwtKeys = await tx.query<{ kid: string; private_key_encrypted: string }>(`SELECT kid, private_key_encrypted FROM jwt_signing_keys FOR UPDATE`);
    for (const row of jwtKeys.rows) {
      const pem = decryptSecret(jwtEncryptionKey(current.key), row.private_key_encrypted);
      await tx.query(`UPDATE jwt_signing_keys SET private_key_encrypted = $2 WHERE kid = $1`, [row.kid, encryptSecret(jwtEncryptionKey(next), pem)]);
    }
    const totp = await tx.query<{ user_id: number; secret_encrypted: string }>(`SELECT user_id, secret_encrypted FROM mfa_totp FOR UPDATE`);
    const [totpFrom, totpTo] = [derivedKeys(current.key).mfaSecretsKey, derivedKeys(next).mfaSecretsKey];
    for (const row of totp.rows) {
      await tx.query(`UPDATE mfa_totp SET secret_encrypted = $2 WHERE user_id = $1`, [row.user_id, encryptSecret(totpTo, decryptSecret(totpFrom, row.secret_encrypted))]);
    }
    await tx.query(`UPDATE secrets_key_check SET fingerprint = $1, sealed = $2, updated_at = $3`, [fingerprintOf(next), sealCheck(next), now]);
    return { webhooks: webhooks.rowCount, jwtKeys: jwtKeys.rowCount, totpSecrets: totp.rowCount };
  });
}
