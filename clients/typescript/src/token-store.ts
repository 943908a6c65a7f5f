import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/** What a session keeps: both tokens (a refresh replaces both) and when the access token expires. */
export interface StoredTokens {
  accessToken: string;
  refreshToken: string;
  /** Milliseconds since the epoch at which the access token expires. */
  accessTokenExpiresAt: number;
}

/**
 * Where a session keeps its tokens: memory by default, a file (FileTokenStore), or the caller's own
 * (a database row, a keychain). save(undefined) forgets them (logout, a refused refresh token).
 * Save both tokens every time: after a refresh, the previous refresh token is spent, and presenting
 * it again is taken for theft (Plaza's reuse detection ends every session of the user).
 */
export interface TokenStore {
  load(): Promise<StoredTokens | undefined> | StoredTokens | undefined;
  save(tokens: StoredTokens | undefined): Promise<void> | void;
}

export class MemoryTokenStore implements TokenStore {
  private tokens: StoredTokens | undefined;
  constructor(initial?: StoredTokens) {
    this.tokens = initial;
  }
  load(): StoredTokens | undefined {
    return this.tokens;
  }
  save(tokens: StoredTokens | undefined): void {
    this.tokens = tokens;
  }
}

/** A JSON file, mode 0600, replaced atomically (a crash mid-write never leaves half a token). */
export class FileTokenStore implements TokenStore {
  constructor(readonly path: string) {}

  async load(): Promise<StoredTokens | undefined> {
    try {
      return JSON.parse(await readFile(this.path, 'utf8')) as StoredTokens;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async save(tokens: StoredTokens | undefined): Promise<void> {
    if (tokens === undefined) {
      await rm(this.path, { force: true });
      return;
    }
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    const draft = `${this.path}.${process.pid}.tmp`;
    await writeFile(draft, JSON.stringify(tokens), { mode: 0o600 });
    await chmod(draft, 0o600);
    await rename(draft, this.path);
  }
}
