/**
 * The SQLite adapter against the shared conformance suite. Each database is a fresh file in a
 * temp directory; `connectAnother` opens a second SqliteStorage (a second connection, as
 * another process would) on the same file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Storage } from '../../src/core/storage.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import { runStorageConformance } from '../conformance/index.js';

runStorageConformance({
  name: 'sqlite',
  create: async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-sqlite-conf-'));
    const file = path.join(dir, 'jobs.db');
    const storage = sqliteStorage({ path: file });
    await storage.migrate();
    const others: Storage[] = [];
    return {
      storage,
      connectAnother: async () => {
        const s = sqliteStorage({ path: file });
        others.push(s);
        return s;
      },
      cleanup: async () => {
        for (const s of others) await s.close();
        await storage.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
});
