/**
 * Who migrates (docs/databases.md, "Migrations"): the CLI's `tick` and `worker` run
 * `storage.migrate()` before they start, so a crontab line works on a fresh database; a
 * `Worker` made in code does not touch the schema, so the app migrates first.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import { pino } from 'pino';
import { Worker, defineJob } from '../../src/index.js';
import { SCHEMA_VERSION } from '../../src/storage/sqlite/index.js';
import { FIXTURES, cli, tempDb, withDb } from './support.js';

describe('migrations at start', () => {
  test('`leasehold tick` on a database never migrated: migrates it, then runs', async () => {
    const t = tempDb();
    try {
      const r = await cli(['--db', t.db, 'tick', '--handlers', path.join(FIXTURES, 'handlers.ts'), '--max-seconds', '5']);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(await withDb(t.file, (s) => s.schemaVersion()), SCHEMA_VERSION);
    } finally {
      t.cleanup();
    }
  });

  test('a Worker made in code leaves the schema alone: its start fails on a database never migrated', async () => {
    const t = tempDb();
    try {
      await withDb(t.file, async (storage) => {
        const worker = new Worker({ storage, jobs: [defineJob({ type: 'x', handler: () => undefined })], logger: pino({ level: 'silent' }) });
        await assert.rejects(worker.start(), /no such table/);
        await worker.stop({ deadlineMs: 100 });
        assert.equal(await storage.schemaVersion(), 0);
      });
    } finally {
      t.cleanup();
    }
  });
});
