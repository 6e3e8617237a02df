/**
 * What only the SQLite adapter has to prove about attempt rows: written when the attempt ends
 * (migration 3), next to rows a schema-2 claim opened, and a schema-2 file migrated to 3.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { SQLITE_LATEST_VERSION, SQLITE_MIGRATIONS, sqliteStorage } from '../../src/storage/sqlite/index.js';
import { withPrefix } from '../../src/storage/sqlite/sqlite-migrations.js';
import { MIGRATIONS_SQL } from '../../src/storage/sqlite/sqlite-sql.js';
import { job, tempFiles } from './sqlite-support.js';

const tempFile = tempFiles();

describe('sqlite specific: attempt rows', () => {
  /** What a schema-2 claim did besides leasing: open the attempt row from the job row. */
  function openAsSchema2(file: string, prefix: string, id: string): void {
    const raw = new Database(file);
    try {
      raw.prepare(`INSERT INTO ${prefix}job_attempts (job_id, attempt, worker_id, lease_token, started_at, outcome)
        SELECT id, attempts, locked_by, lease_token, started_at, 'running' FROM ${prefix}jobs WHERE id = ?`).run(Number(id));
    } finally {
      raw.close();
    }
  }
  /** Queued jobs as a schema-2 worker inserted them: ids from AUTOINCREMENT. */
  function insertAsSchema2(file: string, prefix: string, n: number): void {
    const raw = new Database(file);
    try {
      const ins = raw.prepare(`INSERT INTO ${prefix}jobs (queue, type, payload, status, priority, run_at, max_attempts, timeout_ms, max_runtime_ms, created_at, updated_at)
        VALUES ('default', 'm2', '{}', 'queued', 0, 0, 5, 60000, 60000, 0, 0)`);
      for (let i = 0; i < n; i++) ins.run();
    } finally {
      raw.close();
    }
  }
  function attemptRows(file: string, prefix: string, id: string): number {
    const raw = new Database(file, { readonly: true });
    try {
      return (raw.prepare(`SELECT count(*) AS n FROM ${prefix}job_attempts WHERE job_id = ?`).get(Number(id)) as { n: number }).n;
    } finally {
      raw.close();
    }
  }

  it('a claim writes no attempt row, listAttempts reads it from the job row; the finish writes one closed row', async () => {
    const file = tempFile();
    let t = Date.UTC(2030, 0, 1);
    const s = sqliteStorage({ path: file, clock: () => t });
    await s.migrate();
    await s.insertJobs([job('att')]);
    const [c] = await s.claimJobs({ workerId: 'w-att', types: ['att'], queues: null, limit: 1, leaseMs: 30_000 });
    assert.equal(attemptRows(file, 'leasehold_', c!.id), 0, 'the claim wrote no attempt row');
    assert.deepEqual(await s.listAttempts(c!.id), [{
      id: `running:${c!.id}`, jobId: c!.id, attempt: 1, workerId: 'w-att', leaseToken: c!.leaseToken, startedAt: c!.startedAt,
      finishedAt: null, durationMs: null, outcome: 'running', errorCode: null, errorMessage: null, errorStack: null, retryDelayMs: null,
    }]);
    t += 1234;
    const error = { code: 'E_ATT', message: 'boom', stack: 'Error: boom' };
    const res = await s.finishJobs([{ id: c!.id, leaseToken: c!.leaseToken, status: 'failed', runAfterMs: 0, error, attempt: { outcome: 'failed', error, retryDelayMs: 250 } }]);
    assert.deepEqual(res, [{ id: c!.id, applied: true }]);
    assert.equal(attemptRows(file, 'leasehold_', c!.id), 1, 'the finish wrote one row');
    const [a, ...more] = await s.listAttempts(c!.id);
    assert.deepEqual(more, []);
    assert.match(a!.id, /^\d+$/);
    assert.deepEqual([a!.attempt, a!.workerId, a!.leaseToken, a!.startedAt, a!.finishedAt, a!.durationMs, a!.outcome, a!.errorCode, a!.errorMessage, a!.errorStack, a!.retryDelayMs],
      [1, 'w-att', c!.leaseToken, c!.startedAt, new Date(t), 1234, 'failed', 'E_ATT', 'boom', 'Error: boom', 250]);
    // a lost lease writes nothing
    assert.deepEqual(await s.finishJobs([{ id: c!.id, leaseToken: c!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }]), [{ id: c!.id, applied: false }]);
    assert.equal(attemptRows(file, 'leasehold_', c!.id), 1);
    await s.close();
  });

  it('an attempt row a schema-2 claim opened is closed in place by the finish and by a cancel: one row, not two', async () => {
    const file = tempFile();
    let t = Date.UTC(2030, 0, 1);
    const s = sqliteStorage({ path: file, clock: () => t });
    await s.migrate();
    await s.insertJobs([job('old'), job('old')]);
    const [f, k] = await s.claimJobs({ workerId: 'w-old', types: ['old'], queues: null, limit: 2, leaseMs: 30_000 });
    for (const c of [f!, k!]) openAsSchema2(file, 'leasehold_', c.id);
    const [opened, ...synthesized] = await s.listAttempts(f!.id);
    assert.deepEqual([opened!.outcome, synthesized], ['running', []], 'the open row, not also one from the job row');
    assert.match(opened!.id, /^\d+$/);
    t += 50;
    assert.deepEqual(await s.finishJobs([{ id: f!.id, leaseToken: f!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }]), [{ id: f!.id, applied: true }]);
    const [closed, ...more] = await s.listAttempts(f!.id);
    assert.deepEqual(more, []);
    assert.deepEqual([closed!.id, closed!.outcome, closed!.startedAt, closed!.durationMs], [opened!.id, 'succeeded', f!.startedAt, 50]);
    t += 25;
    assert.equal((await s.cancelJob(k!.id)).applied, true);
    assert.deepEqual((await s.listAttempts(k!.id)).map((a) => [a.outcome, a.errorCode, a.errorMessage, a.durationMs]), [['cancelled', 'CANCELLED', 'cancelled by an operator', 75]]);
    assert.deepEqual([attemptRows(file, 'leasehold_', f!.id), attemptRows(file, 'leasehold_', k!.id)], [1, 1]);
    await s.close();
  });

  it('migrates a schema-2 file holding jobs and open attempt rows to 3; the open rows close in place, new claims write at the end', async () => {
    const file = tempFile();
    const p = 'm2_';
    // schema 2 as the migrations of that version left it
    const raw = new Database(file);
    raw.exec(withPrefix(MIGRATIONS_SQL.createLedger, p));
    for (const m of SQLITE_MIGRATIONS.filter((x) => x.version <= 2)) {
      raw.exec(withPrefix(m.sql, p));
      raw.prepare(withPrefix(MIGRATIONS_SQL.record, p)).run({ version: m.version, name: m.name, now: Date.now() });
    }
    raw.close();
    const s = sqliteStorage({ path: file, tablePrefix: p });
    assert.equal(await s.schemaVersion(), 2);
    // what schema-2 workers leave behind: a running job with its open attempt row, a queued one
    insertAsSchema2(file, p, 2);
    const [old] = await s.claimJobs({ workerId: 'w2', types: ['m2'], queues: null, limit: 1, leaseMs: 30_000 });
    openAsSchema2(file, p, old!.id);
    const leaseIndex = (): unknown => {
      const r = new Database(file, { readonly: true });
      try {
        return r.prepare(`SELECT "unique" AS u FROM pragma_index_list('${p}job_attempts') WHERE name = '${p}job_attempts_job_idx'`).get();
      } finally {
        r.close();
      }
    };
    assert.deepEqual(leaseIndex(), { u: 0 });
    const res = await s.migrate();
    assert.deepEqual([res.from, res.to, res.applied.map((a) => a.version)], [2, SQLITE_LATEST_VERSION, [3, 6, 9]]);
    assert.deepEqual(leaseIndex(), { u: 1 }, '(job_id, lease_token) is unique');
    assert.equal(attemptRows(file, p, old!.id), 1, 'the open row survived the migration');
    assert.deepEqual((await s.listAttempts(old!.id)).map((a) => [a.workerId, a.outcome]), [['w2', 'running']]);
    await s.finishJobs([{ id: old!.id, leaseToken: old!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }]);
    const [fresh] = await s.claimJobs({ workerId: 'w3', types: ['m2'], queues: null, limit: 1, leaseMs: 30_000 });
    assert.equal(attemptRows(file, p, fresh!.id), 0);
    await s.finishJobs([{ id: fresh!.id, leaseToken: fresh!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }]);
    for (const [id, worker] of [[old!.id, 'w2'], [fresh!.id, 'w3']] as const) {
      assert.deepEqual((await s.listAttempts(id)).map((a) => [a.workerId, a.outcome]), [[worker, 'succeeded']], `job ${id}`);
      assert.equal(attemptRows(file, p, id), 1, `job ${id}: one row`);
    }
    assert.equal(await s.pruneJobs({ olderThanMs: -1, statuses: ['succeeded'], limit: 10 }), 2);
    assert.equal(attemptRows(file, p, old!.id) + attemptRows(file, p, fresh!.id), 0, 'attempts go with their jobs');
    await s.close();
  });
});
