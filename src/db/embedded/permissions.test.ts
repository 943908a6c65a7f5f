import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ConfigError } from '../../config.js';
import { assertPrivate, ensurePrivateDirectory } from './permissions.js';

const root = mkdtempSync(join(tmpdir(), 'plaza-perm-'));
after(() => rmSync(root, { recursive: true, force: true }));

test('DATA_DIR is created 0700, and one that group or others can read is refused with the chmod that fixes it', () => {
  const dir = join(root, 'data');
  ensurePrivateDirectory(dir);
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  for (const mode of [0o750, 0o705, 0o711]) {
    chmodSync(dir, mode);
    assert.throws(() => ensurePrivateDirectory(dir), (error: Error) => error instanceof ConfigError && error.message.includes(`${dir} is readable by group or others`) && error.message.includes(`chmod 700 ${dir}`));
  }
});

test('a DATA_DIR that cannot be a directory is one line naming why, not a stack trace', () => {
  const file = join(root, 'a-file');
  writeFileSync(file, '');
  const dangling = join(root, 'dangling');
  symlinkSync(join(root, 'nowhere', 'at-all'), dangling);
  for (const [dir, why] of [[file, 'a file of that name is in the way'], [join(file, 'sub'), 'a part of the path is a file'], [dangling, 'a part of the path is a link to nothing']] as const) {
    assert.throws(() => ensurePrivateDirectory(dir), (error: Error) => error instanceof ConfigError && error.message.startsWith(`${dir} cannot be used as a directory (`) && error.message.includes(why), dir);
  }
});

test('a keys file readable by group or others is refused with chmod 600; a missing one is fine', () => {
  const file = join(root, 'keys.json');
  assertPrivate(file, 'file');
  writeFileSync(file, '{}', { mode: 0o600 });
  assertPrivate(file, 'file');
  chmodSync(file, 0o640);
  assert.throws(() => assertPrivate(file, 'file'), /keys\.json is readable by group or others \(mode 0640\).*chmod 600 /);
  const spaced = join(root, "it's here.json");
  writeFileSync(spaced, '{}', { mode: 0o604 });
  assert.throws(() => assertPrivate(spaced, 'file'), /chmod 600 '.*it'\\''s here\.json'/);
});
