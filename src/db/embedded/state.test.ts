import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { processStartTime } from './processes.js';
import { claimOwnership, readState, releaseOwnership, writeState, type OwnerState } from './state.js';

describe('the embedded server state file (one owner per DATA_DIR)', () => {
  const dirs: string[] = [];
  const freshDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'plaza-state-'));
    dirs.push(dir);
    return dir;
  };
  after(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  const stateOf = (owner: Partial<OwnerState>): string =>
    JSON.stringify({ hostname: 'box', command: 'plaza serve', startedAt: '2026-01-01T00:00:00Z', ...owner });

  test('the first claim wins and writes a private file; release removes it', () => {
    const dir = freshDir();
    const claim = claimOwnership(dir);
    assert.ok('owner' in claim);
    assert.equal(claim.owner.pid, process.pid);
    assert.equal(statSync(join(dir, 'postgres.state.json')).mode & 0o777, 0o600);
    writeState(dir, { ...claim.owner, postmasterPid: 123, host: dir, port: 5432 });
    assert.equal(readState(dir)?.postmasterPid, 123);
    releaseOwnership(dir);
    assert.equal(readState(dir), undefined);
  });

  test('a live owner is returned as busy, by pid and start time', async () => {
    const dir = freshDir();
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      await new Promise((resolve) => other.once('spawn', resolve));
      writeFileSync(join(dir, 'postgres.state.json'), stateOf({ pid: other.pid, startTime: processStartTime(other.pid!) }));
      const claim = claimOwnership(dir);
      assert.ok('busy' in claim);
      assert.equal(claim.busy.pid, other.pid);
    } finally {
      other.kill('SIGKILL');
    }
  });

  test('a repeated pid is not the old owner: a dead owner or the same pid with another start time is taken over', () => {
    for (const stale of [
      // PID 1 in a container restarts as PID 1: the pid is alive, the start time differs.
      stateOf({ pid: process.pid === 1 ? 1 : process.ppid, startTime: 'an earlier boot' }),
      stateOf({ pid: 2 ** 22 + 12345, startTime: '1' }),
    ]) {
      const dir = freshDir();
      writeFileSync(join(dir, 'postgres.state.json'), stale);
      const claim = claimOwnership(dir);
      assert.ok('owner' in claim, stale);
      assert.equal(JSON.parse(readFileSync(join(dir, 'postgres.state.json'), 'utf8')).pid, process.pid);
    }
  });
});
