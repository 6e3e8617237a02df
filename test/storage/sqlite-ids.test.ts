/**
 * What only the SQLite adapter has to prove about job ids: from schema 6 they come from the
 * largest id and a floor instead of AUTOINCREMENT (one page less per one-job commit), and a
 * file migrated from schema 3 keeps every job, attempt row and id, and reuses none.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { SQLITE_LATEST_VERSION, SQLITE_MIGRATIONS, sqliteStorage } from '../../src/storage/sqlite/index.js';
import { withPrefix } from '../../src/storage/sqlite/sqlite-migrations.js';
import { MIGRATIONS_SQL } from '../../src/storage/sqlite/sqlite-sql.js';
import { job, tempFiles } from './sqlite-support.js';

const tempFile = tempFiles();

/** A file at schema `version`, as the migrations up to it left it. */
function fileAtSchema(version: number, prefix: string): string {
  const file = tempFile();
  const raw = new Database(file);
  raw.exec(withPrefix(MIGRATIONS_SQL.createLedger, prefix));
  for (const m of SQLITE_MIGRATIONS.filter((x) => x.version <= version)) {
    raw.exec(withPrefix(m.sql, prefix));
    raw.prepare(withPrefix(MIGRATIONS_SQL.record, prefix)).run({ version: m.version, name: m.name, now: Date.now() });
  }
  raw.close();
  return file;
}

function query<T>(file: string, sql: string): T[] {
  const raw = new Database(file, { readonly: true });
  try {
    return raw.prepare(sql).all() as T[];
  } finally {
    raw.close();
  }
}

describe('sqlite specific: job ids', () => {
  it('migrates a schema-3 file to 6: jobs, attempt rows and ids kept, foreign keys on again, no id reused', async () => {
    const p = 'm3_';
    const file = fileAtSchema(3, p);
    const s = sqliteStorage({ path: file, tablePrefix: p });
    assert.equal(await s.schemaVersion(), 3);
    // schema-3 code inserts through AUTOINCREMENT (the floor table does not exist yet)
    const raw = new Database(file);
    const ins = raw.prepare(`INSERT INTO ${p}jobs (queue, type, payload, status, priority, run_at, max_attempts, timeout_ms, max_runtime_ms, created_at, updated_at)
      VALUES ('default', 'm3', '{"n":1}', 'queued', 0, 0, 5, 60000, 60000, 0, 0)`);
    for (let i = 0; i < 5; i++) ins.run();
    raw.close();
    const claimed = await s.claimJobs({ workerId: 'w3', types: ['m3'], queues: null, limit: 5, leaseMs: 30_000 });
    claimed.sort((a, b) => Number(a.id) - Number(b.id));
    for (const c of claimed) await s.finishJobs([{ id: c.id, leaseToken: c.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }]);
    // the two newest go: AUTOINCREMENT remembers id 5, the table's largest is 3
    const db = new Database(file);
    db.prepare(`DELETE FROM ${p}job_attempts WHERE job_id IN (4, 5)`).run();
    db.prepare(`DELETE FROM ${p}jobs WHERE id IN (4, 5)`).run();
    // an attempt row an operator orphaned (the sqlite3 shell runs with foreign keys off): not
    // the rebuild's doing, so it does not stop the migration
    db.pragma('foreign_keys = OFF');
    db.prepare(`INSERT INTO ${p}job_attempts (job_id, attempt, worker_id, lease_token, started_at, outcome) VALUES (99, 1, 'w', 't', 0, 'running')`).run();
    db.close();

    const res = await s.migrate();
    assert.deepEqual([res.from, res.to, res.applied.map((a) => a.version)], [3, SQLITE_LATEST_VERSION, [6, 9]]);
    assert.deepEqual(query(file, `SELECT id FROM ${p}jobs ORDER BY id`), [{ id: 1 }, { id: 2 }, { id: 3 }]);
    assert.deepEqual(query(file, `SELECT job_id FROM ${p}job_attempts ORDER BY job_id`), [{ job_id: 1 }, { job_id: 2 }, { job_id: 3 }, { job_id: 99 }], 'attempt rows survive the rebuild');
    assert.deepEqual(query(file, `SELECT floor FROM ${p}job_id_floor`), [{ floor: 5 }], 'the floor starts at the old sequence');
    assert.deepEqual(query(file, `SELECT name FROM sqlite_sequence WHERE name = '${p}jobs'`), [], 'no AUTOINCREMENT left on jobs');
    const indexes = query<{ name: string }>(file, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = '${p}jobs' AND sql IS NOT NULL ORDER BY name`);
    assert.deepEqual(indexes.map((i) => i.name), ['claim_idx', 'finished_at_idx', 'idempotency_key_idx', 'running_idx', 'schedule_slot_idx'].map((x) => `${p}jobs_${x}`));

    const [next] = await s.insertJobs([job('m3')]);
    assert.equal(next!.job.id, '6', 'above the pruned 5, not the largest 3 + 1');
    const run = await s.insertJobs([job('m3'), job('m3')]);
    assert.deepEqual(run.map((r) => r.job.id), ['7', '8'], 'a run takes consecutive ids in order');
    // foreign keys are on again: pruning still takes the attempt rows with their job
    assert.equal(await s.pruneJobs({ olderThanMs: -1, statuses: ['succeeded'], limit: 10 }), 3);
    assert.deepEqual(query(file, `SELECT job_id FROM ${p}job_attempts`), [{ job_id: 99 }]);
    const [after] = await s.insertJobs([job('m3')]);
    assert.equal(after!.job.id, '9');
    await s.close();
  });

  it('deleting the newest job by hand raises the floor: the next id is still new, and code that ignores the floor is refused', async () => {
    const file = tempFile();
    const s = sqliteStorage({ path: file });
    await s.migrate();
    const [a, b] = await s.insertJobs([job('hand'), job('other')]);
    const db = new Database(file);
    db.prepare('DELETE FROM leasehold_jobs WHERE id = ?').run(Number(b!.job.id));
    // code from before schema 6 would let SQLite take max(id) + 1, the deleted id: refused
    assert.throws(
      () => db.prepare(`INSERT INTO leasehold_jobs (queue, type, payload, status, run_at, max_attempts, timeout_ms, max_runtime_ms, created_at, updated_at)
        VALUES ('default', 'old', '{}', 'queued', 0, 1, 1, 1, 0, 0)`).run(),
      /older than schema 6/,
    );
    db.close();
    const [c] = await s.insertJobs([job('hand')]);
    assert.ok(Number(c!.job.id) > Number(b!.job.id), `${c!.job.id} after deleted ${b!.job.id}`);
    assert.ok(Number(a!.job.id) < Number(b!.job.id));
    await s.close();
  });
});
