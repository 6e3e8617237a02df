/**
 * Shared by the sqlite-*.test.ts suites: a job to enqueue, and database files in temporary
 * directories that are removed after the test file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import type { NewJob, Storage } from '../../src/core/storage.js';
import type { SqliteDriverName } from '../../src/storage/sqlite/index.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import type { ConformanceHarness } from '../conformance/index.js';

export function job(type: string, over: Partial<NewJob> = {}): NewJob {
  return { queue: 'default', type, payload: { n: 1 }, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000, ...over };
}

/** Call once per test file: returns tempFile(), a new database path each call; an after() hook removes them all. */
export function tempFiles(): () => string {
  const dirs: string[] = [];
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return function tempFile(): string {
    const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-sqlite-'));
    dirs.push(dir);
    return path.join(dir, 'jobs.db');
  };
}

/** The conformance harness on a fresh file per suite; `connectAnother` opens a second connection, as another process would. */
export function sqliteConformance(name: string, driver?: SqliteDriverName): ConformanceHarness {
  return {
    name,
    create: async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-sqlite-conf-'));
      const file = path.join(dir, 'jobs.db');
      const open = () => sqliteStorage({ path: file, ...(driver ? { driver } : {}) });
      const storage = open();
      await storage.migrate();
      const others: Storage[] = [];
      return {
        storage,
        connectAnother: async () => {
          const s = open();
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
  };
}
