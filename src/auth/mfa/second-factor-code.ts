import type { Queryable } from '../../db/database.js';
import { decryptSecret } from '../../keys/secret-box.js';
import { findTotp, useRecoveryCode, useTotpStep } from './mfa.repository.js';
import { isTotpCode, matchTotp } from './totp.js';

export type CodeMethod = 'totp' | 'recovery_code';

/**
 * Uses a code of the user's active second factor: a TOTP code of a step later than the last used
 * one, or an unused recovery code. Either is consumed by a conditional UPDATE, so two requests
 * with one code cannot both pass. Undefined when the code is none of these.
 */
export async function useSecondFactorCode(db: Queryable, mfaSecretsKey: Buffer, userId: number, code: string, now: Date): Promise<CodeMethod | undefined> {
  const totp = await findTotp(db, userId);
  if (!totp?.activated_at) return undefined;
  const trimmed = code.replace(/\s/g, '');
  if (isTotpCode(trimmed)) {
    const lastStep = totp.last_used_step === null ? null : Number(totp.last_used_step);
    const step = matchTotp(decryptSecret(mfaSecretsKey, totp.secret_encrypted), trimmed, now, lastStep);
    return step !== undefined && (await useTotpStep(db, userId, step)) ? 'totp' : undefined;
  }
  return (await useRecoveryCode(db, userId, code, now)) ? 'recovery_code' : undefined;
}
