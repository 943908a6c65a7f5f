import { readKeyFile, stageKeyFile, decodeSecretsKey, fingerprintOf, newSecretsKey, resolveSecretsKey } from '../keys/secrets-key.js';
import { isJwtAlgorithm, JWT_ALGORITHMS } from '../keys/jwt-algorithms.js';
import { rotateJwtKey } from '../keys/jwt-key-ring.js';
import { PUBLICATION_SECONDS, publishedAfterRetirementMs, signingLeadSeconds } from '../keys/jwt-key-timeline.js';
import { rotateSecretsKey } from '../keys/rotate-secrets-key.js';
import { loadKeys } from '../keys.js';
import { readStdin, table, type Command } from './command.js';
import { UsageError } from './usage-error.js';

/** Key management: JWT signing keys and SECRETS_KEY, for every process of the installation at once. */
export const keyCommands: Command[] = [
  {
    name: 'keys status',
    args: '',
    summary: 'Show the SECRETS_KEY fingerprints (this process and the database) and the JWT keys',
    async run(_input, ctx) {
      const config = ctx.config();
      // Looking must not create a key file: without SECRETS_KEY and without the file there is no key yet.
      const secrets = config.SECRETS_KEY || readKeyFile(config.DATA_DIR) ? resolveSecretsKey(config) : undefined;
      const db = await ctx.database();
      const check = await db.query<{ fingerprint: string }>(`SELECT fingerprint FROM secrets_key_check`);
      ctx.out(secrets ? `SECRETS_KEY from ${secrets.source}: fingerprint ${fingerprintOf(secrets.key)}` : 'SECRETS_KEY: not set, and no key file in DATA_DIR yet');
      ctx.out(`database secrets encrypted under:  fingerprint ${check.rows[0]?.fingerprint ?? '(not recorded yet)'}`);
      if (config.JWT_PRIVATE_KEY) ctx.out('JWT signing key: JWT_PRIVATE_KEY (from the environment)');
      // Each key's algorithm is the alg of its stored public JWK (jwt-key-ring.ts).
      const { rows } = await db.query<{ kid: string; alg: string; created_at: Date; activates_at: Date; retired_at: Date | null }>(
        `SELECT kid, public_jwk->>'alg' AS alg, created_at, activates_at, retired_at FROM jwt_signing_keys ORDER BY activates_at, kid`,
      );
      const until = (retiredAt: Date | null) => (retiredAt ? new Date(retiredAt.getTime() + publishedAfterRetirementMs(config)) : '');
      ctx.out(table(['KID', 'ALG', 'PUBLISHED AT', 'SIGNS FROM', 'SIGNS UNTIL', 'IN JWKS UNTIL'], rows.map((row) => [row.kid, row.alg, row.created_at, row.activates_at, row.retired_at ?? '', until(row.retired_at)])));
    },
  },
  {
    name: 'keys rotate-jwt',
    args: `[--algorithm ${JWT_ALGORITHMS.join('|')}]`,
    summary: 'Add a new JWT signing key; it signs once every verifier can know it, the old one then stops',
    options: { algorithm: { type: 'string' } },
    details: [
      'The new key is for --algorithm, JWT_ALGORITHM (ES256 by default) when not given; it may differ from the old key\'s:',
      'the old key\'s tokens keep verifying with the old key\'s algorithm until they expire. Finish an upgrade from a release',
      'that knows only EdDSA before rotating to another algorithm: such processes cannot read the new key.',
      'The new key is published at once (each process serves it within 60 s) and signs from 60 s + JWKS_MAX_AGE_SECONDS +',
      'JWT_VERIFIER_COOLDOWN_SECONDS later (390 s by default), by this command\'s settings: give it the servers\' values.',
      'At that instant every process switches to it, and the old key signs nothing more; it stays in the JWKS until the',
      'tokens it signed have expired (ACCESS_TOKEN_TTL_SECONDS + JWT_CLOCK_TOLERANCE_SECONDS).',
    ].join('\n'),
    async run({ values }, ctx) {
      const algorithm = values.algorithm;
      if (algorithm !== undefined && !isJwtAlgorithm(algorithm)) throw new UsageError(`--algorithm must be one of ${JWT_ALGORITHMS.join(', ')}.`);
      const config = ctx.config();
      if (config.JWT_PRIVATE_KEY) throw new UsageError('The signing key comes from JWT_PRIVATE_KEY: rotate it there (and list the old public key in JWT_VERIFICATION_KEYS), or unset it to keep keys in the database.');
      const db = await ctx.database();
      const keys = await loadKeys(config, db, ctx);
      const rotated = await rotateJwtKey(db, keys.secrets.key, config, ctx, algorithm ?? config.JWT_ALGORITHM);
      const lead = signingLeadSeconds(config);
      ctx.out(`New JWT signing key ${rotated.kid} (${rotated.alg}): published now, signs from ${rotated.signsFrom.toISOString()} (in ${lead} s: ${PUBLICATION_SECONDS} s for every process to publish it + JWKS_MAX_AGE_SECONDS ${config.JWKS_MAX_AGE_SECONDS} + JWT_VERIFIER_COOLDOWN_SECONDS ${config.JWT_VERIFIER_COOLDOWN_SECONDS}).`);
      for (const old of rotated.retired) {
        ctx.out(`${old.kid} signs until ${rotated.signsFrom.toISOString()}, then nothing more; in the JWKS until ${old.publishedUntil.toISOString()}, when its last tokens have expired.`);
      }
    },
  },
  {
    name: 'keys rotate-secrets-key',
    args: '[--new-key-stdin]',
    summary: 'Re-encrypt every stored secret under a new SECRETS_KEY, in one transaction',
    details: [
      'Without --new-key-stdin a new key is generated. When the current key comes from DATA_DIR/keys.json, the file is updated;',
      'when it comes from the environment, the new key is printed: set SECRETS_KEY to it for every process and restart them.',
      'Processes still running with the old key cannot open the secrets any more: stop them first, or restart them right after.',
    ].join('\n'),
    options: { 'new-key-stdin': { type: 'boolean', default: false } },
    async run({ values }, ctx) {
      const config = ctx.config();
      const current = resolveSecretsKey(config);
      const next = values['new-key-stdin'] ? decodeSecretsKey((await readStdin(ctx.stdin, 'New SECRETS_KEY (base64 of 32 bytes)')).trim(), 'standard input') : newSecretsKey();
      if (next.equals(current.key)) throw new UsageError('The new key is the current one.');
      const db = await ctx.database();
      // With the key file, the new key is on disk (keys.json.new) before the database commits to
      // it, so that a crash in between cannot lose it; the rename after the commit makes it current.
      const fromFile = !config.SECRETS_KEY;
      const staged = fromFile ? stageKeyFile(config.DATA_DIR, { ...readKeyFile(config.DATA_DIR)!, secretsKey: next.toString('base64') }) : undefined;
      let moved;
      try {
        moved = await rotateSecretsKey(db, current, next, ctx.now());
      } catch (error) {
        staged?.discard();
        throw error;
      }
      staged?.commit();
      ctx.out(`Re-encrypted ${moved.webhooks} webhook(s), ${moved.jwtKeys} JWT key(s) and ${moved.totpSecrets} TOTP secret(s); new fingerprint ${fingerprintOf(next)}.`);
      if (fromFile) {
        ctx.out(`${current.source} now holds the new key. Restart the running processes.`);
      } else {
        ctx.out(`New SECRETS_KEY=${next.toString('base64')}`);
        ctx.err('Set SECRETS_KEY to this value for every process of the installation and restart them.');
      }
    },
  },
];
