/**
 * SQLite plans of the bulk statements: a status with a partial index (failed, dead, cancelled)
 * is read from it within the id range, so counting the dead jobs of a million-job table reads
 * the dead ones only, not every row of the range (a delete's guards then read those rows).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import Database from 'better-sqlite3';
import { checkBulkRange } from '../../src/core/operator.js';
import { openStorage } from '../../src/index.js';
import { countSql, takeSql } from '../../src/storage/sqlite/bulk.js';

const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-bulk-plans-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('bulk count and take of a failed, dead or cancelled filter read that status\'s partial index', async () => {
  const file = path.join(dir, 'plans.db');
  const storage = await openStorage(`sqlite:${file}`);
  await storage.migrate();
  await storage.close();
  const db = new Database(file, { readonly: true });
  try {
    const plan = (sql: string) => (db.prepare(`EXPLAIN QUERY PLAN ${sql.replaceAll('{p}', 'leasehold_')}`).all({ after: 0, through: 1_000_000, limit: 100 }) as { detail: string }[]).map((r) => r.detail).join(' | ');
    for (const status of ['failed', 'dead', 'cancelled'] as const) {
      const range = checkBulkRange({ action: 'delete', filter: { status }, afterId: null, throughId: '1000000' });
      assert.match(plan(countSql(range)), new RegExp(`USING (COVERING )?INDEX leasehold_jobs_${status}_idx \\(id>\\? AND id<\\?\\)`), `count of ${status}`);
      assert.match(plan(takeSql(range)), new RegExp(`leasehold_jobs_${status}_idx`), `take of ${status}`);
    }
  } finally {
    db.close();
  }
});
