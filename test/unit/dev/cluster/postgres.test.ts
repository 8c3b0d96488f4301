/**
 * The lock file a killed PostgreSQL leaves in its data directory (dev/cluster/postgres.ts): cleared when its pid is
 * gone or now belongs to another program, so that the next start of the cluster comes up on the same data.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { clearStalePostmasterPid } from '../../../../dev/cluster/postgres.js';

/** A data directory whose postmaster.pid names `pid`, as PostgreSQL writes it (pid, data directory, start time, port...). */
function dataDirWithLock(pid: number): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'watcher-pg-lock-'));
  writeFileSync(
    path.join(dir, 'postmaster.pid'),
    `${pid}\n${dir}\n1764880000\n5432\n\n127.0.0.1\n  1234567      1\nready   \n`,
  );
  return dir;
}

describe('a stale postmaster.pid', () => {
  it('is removed when its process is gone', () => {
    const exited = spawnSync('true').pid;
    const dir = dataDirWithLock(exited);

    expect(clearStalePostmasterPid(dir)).toBe(true);
    expect(existsSync(path.join(dir, 'postmaster.pid'))).toBe(false);
  });

  it('is removed when its pid now belongs to a program that is not PostgreSQL', () => {
    const dir = dataDirWithLock(process.pid);

    expect(clearStalePostmasterPid(dir)).toBe(true);
    expect(existsSync(path.join(dir, 'postmaster.pid'))).toBe(false);
  });

  it('is no concern when there is none', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'watcher-pg-lock-'));

    expect(clearStalePostmasterPid(dir)).toBe(false);
  });
});
