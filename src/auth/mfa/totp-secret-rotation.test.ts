import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { derivedKeys } from '../../keys.js';
import { rotateSecretsKey } from '../../keys/rotate-secrets-key.js';
import { seedUser } from '../../testing/fixtures.js';
import { createTestDatabase, type TestDatabase } from '../../testing/test-database.js';
import { decryptSecret, encryptSecret } from '../../keys/secret-box.js';
import { upsertPendingTotp } from './mfa.repository.js';

let db: TestDatabase;
before(async () => {
  db = await createTestDatabase();
});
after(() => db.close());

test('rotate-secrets-key re-encrypts the TOTP secrets too: authenticators keep working after a rotation', async () => {
  const master = randomBytes(32);
  const next = randomBytes(32);
  const user = await seedUser(db);
  await upsertPendingTotp(db, user.id, encryptSecret(derivedKeys(master).mfaSecretsKey, 'JBSWY3DPEHPK3PXP'), new Date());
  const moved = await rotateSecretsKey(db, { key: master, source: 'test' }, next, new Date());
  assert.equal(moved.totpSecrets, 1);
  const { rows } = await db.query<{ secret_encrypted: string }>(`SELECT secret_encrypted FROM mfa_totp WHERE user_id = $1`, [user.id]);
  assert.equal(decryptSecret(derivedKeys(next).mfaSecretsKey, rows[0]!.secret_encrypted), 'JBSWY3DPEHPK3PXP');
});
