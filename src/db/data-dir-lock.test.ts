import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DataDirLockedError, lockDataDir } from './data-dir-lock.js';

test('a second lock on one data directory is refused while the first is held', () => {
  const dir = mkdtempSync(join(tmpdir(), 'plaza-lock-'));
  try {
    const lock = lockDataDir(dir);
    assert.throws(() => lockDataDir(dir), (error: unknown) => error instanceof DataDirLockedError && error.message.includes(`process ${process.pid}`));
    lock.release();
    assert.equal(existsSync(join(dir, 'plaza.lock')), false);
    lockDataDir(dir).release();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a lock left by a dead process is taken over', () => {
  const dir = mkdtempSync(join(tmpdir(), 'plaza-lock-'));
  try {
    // A pid that exited: a child we ran to completion.
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
    writeFileSync(join(dir, 'plaza.lock'), JSON.stringify({ pid: Number(dead), hostname: hostname(), command: 'serve', startedAt: new Date().toISOString() }));
    const lock = lockDataDir(dir);
    lock.release();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
