import { readdirSync, readFileSync } from 'node:fs';

/** Every postmaster running on a data directory below root (`postgres -D <root>/…/postgres`). */
export function postmastersUnder(root: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`${root}/`);
      } catch {
        return false;
      }
    })
    .map(Number);
}
