/** SQLite's diagnostics: which filesystem holds the file (the longest mount point above it, from /proc/mounts). */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { filesystemOf } from '../../src/storage/sqlite/diagnostics.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';

describe('sqlite diagnostics: the filesystem of the database file', () => {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'leasehold-fs-')));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const share = path.join(dir, 'my share');
  mkdirSync(share);
  const file = path.join(share, 'jobs.db');
  writeFileSync(file, '');
  const mounts = path.join(dir, 'mounts');

  it('is the longest mount point above the file, with /proc/mounts escapes read', () => {
    writeFileSync(mounts, [
      '/dev/sda1 / ext4 rw 0 0',
      `server:/export ${share.replaceAll(' ', '\\040')} nfs4 rw 0 0`,
      // a longer mount point that only starts like the file's path is not above it
      `server:/other ${`${share}/jo`.replaceAll(' ', '\\040')} cifs rw 0 0`,
      `tmpfs ${dir} tmpfs rw 0 0`,
    ].join('\n'));
    assert.deepEqual(filesystemOf(file, mounts), { type: 'nfs4', mountPoint: share });
    assert.deepEqual(filesystemOf(mounts, mounts), { type: 'tmpfs', mountPoint: dir });
  });

  it('is unknown without a mounts table (not Linux) or without the file', () => {
    assert.equal(filesystemOf(file, path.join(dir, 'nope')), null);
    assert.equal(filesystemOf(path.join(dir, 'missing.db'), mounts), null);
  });

  it('inspect reports it, with the file, as sqlite.filesystem', async () => {
    const s = sqliteStorage({ path: path.join(dir, 'real.db') });
    try {
      await s.migrate();
      const fs = (await s.diagnostics.inspect()).settings.find((x) => x.name === 'sqlite.filesystem');
      assert.ok(fs?.detail?.includes(path.join(dir, 'real.db')), JSON.stringify(fs));
      if (process.platform === 'linux') assert.ok(fs?.value, 'Linux has /proc/mounts');
    } finally {
      await s.close();
    }
  });
});
