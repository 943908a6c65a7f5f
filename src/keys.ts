import { generateKeyPairSync, hkdfSync, randomBytes } from 'node:crypto';
import { linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { calculateJwkThumbprint, exportJWK, importJWK, importPKCS8, type CryptoKey, type JWK } from 'jose';
import { ConfigError, type Config } from './config.js';
import { assertPrivate, ensurePrivateDirectory } from './db/embedded/permissions.js';

/**
 * Key material of the service, imported once at start (a pre-imported key signs ~1.7× faster).
 * - signing: the Ed25519 key that signs access tokens, with its kid;
 * - verification: every public key accepted by kid (the signing one plus rotated-out ones);
 * - webhookSecretsKey: AES-256 key that encrypts webhook signing secrets at rest;
 * - refreshSuccessorKey: HMAC key that derives a grace-period successor from a refresh token.
 */
export interface Keys {
  signing: { kid: string; privateKey: CryptoKey };
  verification: Map<string, CryptoKey>;
  webhookSecretsKey: Buffer;
  refreshSuccessorKey: Buffer;
}

interface KeyFile {
  jwtPrivateKeyPem: string;
  secretsKey: string;
}

export const ALGORITHM = 'EdDSA';

/** Reads keys from config, falling back to DATA_DIR/keys.json, created on first start. */
export async function loadKeys(config: Config): Promise<Keys> {
  const stored = config.JWT_PRIVATE_KEY && config.SECRETS_KEY ? undefined : readOrCreateKeyFile(config.DATA_DIR);
  const pem = config.JWT_PRIVATE_KEY ?? stored!.jwtPrivateKeyPem;
  const secrets = Buffer.from(config.SECRETS_KEY ?? stored!.secretsKey, 'base64');
  if (secrets.length !== 32) throw new ConfigError('SECRETS_KEY must be the base64 encoding of exactly 32 bytes.');
  let extra: JWK[] = [];
  if (config.JWT_VERIFICATION_KEYS) {
    try {
      extra = JSON.parse(config.JWT_VERIFICATION_KEYS) as JWK[];
      if (!Array.isArray(extra) || extra.some((jwk) => typeof jwk.kid !== 'string')) throw new Error('not an array of JWKs with kid');
    } catch (error) {
      throw new ConfigError(`JWT_VERIFICATION_KEYS must be a JSON array of public JWKs, each with a kid: ${(error as Error).message}`);
    }
  }
  try {
    return await buildKeys(pem, secrets, config.JWT_KEY_ID, extra);
  } catch (error) {
    const name = config.JWT_PRIVATE_KEY ? 'JWT_PRIVATE_KEY or JWT_VERIFICATION_KEYS' : `the key file in ${config.DATA_DIR}`;
    throw new ConfigError(`Cannot import ${name}: ${(error as Error).message}. JWT_PRIVATE_KEY must be an Ed25519 PKCS#8 PEM key.`);
  }
}

/** Fresh keys in memory, for tests and tools. */
export function generateKeys(): Promise<Keys> {
  return buildKeys(newPrivateKeyPem(), randomBytes(32));
}

async function buildKeys(pem: string, secrets: Buffer, kid?: string, extraPublicKeys: JWK[] = []): Promise<Keys> {
  const privateKey = await importPKCS8(pem, ALGORITHM, { extractable: true });
  const publicJwk = await exportJWK(privateKey);
  delete publicJwk.d;
  const signingKid = kid ?? (await calculateJwkThumbprint(publicJwk));
  const verification = new Map<string, CryptoKey>();
  verification.set(signingKid, (await importJWK({ ...publicJwk, alg: ALGORITHM }, ALGORITHM)) as CryptoKey);
  for (const jwk of extraPublicKeys) verification.set(jwk.kid!, (await importJWK({ ...jwk, d: undefined }, ALGORITHM)) as CryptoKey);
  return {
    signing: { kid: signingKid, privateKey: (await importPKCS8(pem, ALGORITHM)) as CryptoKey },
    verification,
    webhookSecretsKey: Buffer.from(hkdfSync('sha256', secrets, Buffer.alloc(0), 'plaza webhook secrets', 32)),
    refreshSuccessorKey: Buffer.from(hkdfSync('sha256', secrets, Buffer.alloc(0), 'plaza refresh successor', 32)),
  };
}

function newPrivateKeyPem(): string {
  return generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
}

function readOrCreateKeyFile(dataDir: string): KeyFile {
  const path = join(dataDir, 'keys.json');
  ensurePrivateDirectory(dataDir);
  assertPrivate(path, 'file');
  const draft = `${path}.${process.pid}.tmp`;
  writeFileSync(draft, JSON.stringify({ jwtPrivateKeyPem: newPrivateKeyPem(), secretsKey: randomBytes(32).toString('base64') }), { mode: 0o600 });
  try {
    // link() fails when the file exists: two processes starting at once agree on one complete key set.
    linkSync(draft, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    rmSync(draft, { force: true });
  }
  return JSON.parse(readFileSync(path, 'utf8')) as KeyFile;
}
