/**
 * What only the SQLite adapter has to prove about job ids: they come from the largest id and a
 * floor (the largest id deleted) instead of AUTOINCREMENT, so no id is ever reused, whether a
 * job goes by pruning or by an operator's SQL.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import { job, tempFiles } from './sqlite-support.js';

const tempFile = tempFiles();

function query<T>(file: string, sql: string): T[] {
  const raw = new Database(file, { readonly: true });
  try {
    return raw.prepare(sql).all() as T[];
  } finally {
    raw.close();
  }
}

describe('sqlite specific: job ids', () => {
  it('pruning the newest jobs raises the floor: later ids are above them, a run takes consecutive ids, no AUTOINCREMENT', async () => {
    const file = tempFile();
    const s = sqliteStorage({ path: file });
    await s.migrate();
    const inserted = await s.jobs.insert({ jobs: [job('keep'), job('keep'), job('keep'), job('go'), job('go')] });
    assert.deepEqual(inserted.map((r) => r.job.id), ['1', '2', '3', '4', '5']);
    const claimed = await s.leases.claim({ workerId: 'w', types: ['go'], queues: null, limit: 2, leaseMs: 30_000 });
    await s.leases.finish({ items: claimed.map((c) => ({ id: c.id, leaseToken: c.leaseToken, status: 'succeeded' as const, attempt: { outcome: 'succeeded' as const } })) });
    assert.equal(await s.jobs.prune({ olderThanMs: -1, statuses: ['succeeded'], limit: 10 }), 2);
    assert.deepEqual(query(file, 'SELECT id FROM leasehold_jobs ORDER BY id'), [{ id: 1 }, { id: 2 }, { id: 3 }]);
    assert.deepEqual(query(file, 'SELECT floor FROM leasehold_job_id_floor'), [{ floor: 5 }]);
    assert.deepEqual(query(file, 'SELECT count(*) AS n FROM leasehold_job_attempts'), [{ n: 0 }], 'the attempt rows went with their jobs');
    const [next] = await s.jobs.insert({ jobs: [job('keep')] });
    assert.equal(next!.job.id, '6', 'above the pruned 5, not the largest 3 + 1');
    const run = await s.jobs.insert({ jobs: [job('keep'), job('keep')] });
    assert.deepEqual(run.map((r) => r.job.id), ['7', '8'], 'a run takes consecutive ids in order');
    // job_attempts keeps AUTOINCREMENT, so sqlite_sequence exists
    assert.deepEqual(query(file, "SELECT name FROM sqlite_sequence WHERE name = 'leasehold_jobs'"), [], 'no AUTOINCREMENT on jobs');
    await s.close();
  });

  it('deleting the newest job by hand raises the floor: the next id is still new', async () => {
    const file = tempFile();
    const s = sqliteStorage({ path: file });
    await s.migrate();
    const [a, b] = await s.jobs.insert({ jobs: [job('hand'), job('other')] });
    const db = new Database(file);
    db.prepare('DELETE FROM leasehold_jobs WHERE id = ?').run(Number(b!.job.id));
    db.close();
    const [c] = await s.jobs.insert({ jobs: [job('hand')] });
    assert.ok(Number(c!.job.id) > Number(b!.job.id), `${c!.job.id} after deleted ${b!.job.id}`);
    assert.ok(Number(a!.job.id) < Number(b!.job.id));
    await s.close();
  });
});
