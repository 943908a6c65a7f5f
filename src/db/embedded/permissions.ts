import { mkdirSync, statSync } from 'node:fs';
import { ConfigError } from '../../config.js';

/**
 * DATA_DIR holds the database, its password and the service's keys: only its owner may read it.
 * Creates it 0700 when missing; refuses an existing one that group or others can read.
 */
export function ensurePrivateDirectory(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    // A file in the way, a dangling link, no permission: one line for the operator, not a stack.
    const { code } = error as NodeJS.ErrnoException;
    throw new ConfigError(`${dir} cannot be used as a directory (${code ?? (error as Error).message}${code && UNUSABLE[code] ? `: ${UNUSABLE[code]}` : ''}); check DATA_DIR.`);
  }
  assertPrivate(dir, 'directory');
}

const UNUSABLE: Record<string, string> = {
  EEXIST: 'a file of that name is in the way',
  ENOTDIR: 'a part of the path is a file',
  ENOENT: 'a part of the path is a link to nothing',
  EACCES: 'no permission to create it',
  EPERM: 'no permission to create it',
  EROFS: 'the file system is read-only',
};

/** Stops the start when group or others have any access to `path` (a directory or a file). */
export function assertPrivate(path: string, kind: 'directory' | 'file'): void {
  let mode: number;
  try {
    mode = statSync(path).mode & 0o777;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if (process.platform === 'win32' || (mode & 0o077) === 0) return;
  const fix = kind === 'directory' ? '700' : '600';
  throw new ConfigError(
    `${path} is readable by group or others (mode ${mode.toString(8).padStart(4, '0')}); it holds database files or keys. ` +
      `Fix it with: chmod ${fix} ${shellQuote(path)}`,
  );
}

export function shellQuote(path: string): string {
  return /^[\w./-]+$/.test(path) ? path : `'${path.replace(/'/g, `'\\''`)}'`;
}
