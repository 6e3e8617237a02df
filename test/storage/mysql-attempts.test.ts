/**
 * MySQL/MariaDB attempt rows: written when the attempt ends (migration 3), next to rows a
 * schema-2 claim opened, and a schema-2 database migrated to 3, also after a crash before
 * its ledger row.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { LATEST_MYSQL_VERSION, MYSQL_MIGRATIONS, checkServerVersion } from '../../src/storage/mysql/index.js';
import { LEDGER_DDL, renderDdl } from '../../src/storage/mysql/mysql-migrations.js';
import { mysqlSql } from '../../src/storage/mysql/mysql-sql.js';
import { serverFor } from '../support/databases.js';
import { job, throwawayDatabase } from './mysql-support.js';

const url = await serverFor('mysql', 'mysql specific: attempt rows');

describe('mysql specific: attempt rows', { skip: url === null }, () => {
  const server = throwawayDatabase(url);
  const { db, dbUrl, make } = server;
  let admin: mysql.Connection;
  before(() => {
    admin = server.adminConnection();
  });

  /** Rows of a table, by the admin connection. */
  const rowsOf = async (sql: string, values: unknown[] = []): Promise<Record<string, unknown>[]> =>
    (await admin.query({ sql: sql.replaceAll('{db}', `\`${db}\``), values }))[0] as Record<string, unknown>[];
  /** What a schema-2 claim did besides leasing: open the attempt row from the job row. */
  const openAsSchema2 = (prefix: string, id: string) =>
    rowsOf(`INSERT INTO {db}.${prefix}job_attempts (job_id, attempt, worker_id, lease_token, started_at, outcome)
      SELECT id, attempts, locked_by, lease_token, started_at, 'running' FROM {db}.${prefix}jobs WHERE id = ?`, [id]);
  const attemptRows = async (prefix: string, id: string): Promise<number> =>
    Number((await rowsOf(`SELECT COUNT(*) AS n FROM {db}.${prefix}job_attempts WHERE job_id = ?`, [id]))[0]!.n);

  it('a claim writes no attempt row, listAttempts reads it from the job row; the finish writes one closed row', async () => {
    const s = make({ tablePrefix: 'att_' });
    await s.migrate();
    await s.insertJobs([job('att')]);
    const [c] = await s.claimJobs({ workerId: 'w-att', types: ['att'], queues: null, limit: 1, leaseMs: 30_000 });
    assert.equal(await attemptRows('att_', c!.id), 0, 'the claim wrote no attempt row');
    assert.deepEqual(await s.listAttempts(c!.id), [{
      id: `running:${c!.id}`, jobId: c!.id, attempt: 1, workerId: 'w-att', leaseToken: c!.leaseToken, startedAt: c!.startedAt,
      finishedAt: null, durationMs: null, outcome: 'running', errorCode: null, errorMessage: null, errorStack: null, retryDelayMs: null,
    }]);
    const error = { code: 'E_ATT', message: 'boom', stack: 'Error: boom' };
    await s.finishJobs([{ id: c!.id, leaseToken: c!.leaseToken, status: 'failed', runAfterMs: 0, error, attempt: { outcome: 'failed', error, retryDelayMs: 250 } }]);
    assert.equal(await attemptRows('att_', c!.id), 1, 'the finish wrote one row');
    const [a, ...more] = await s.listAttempts(c!.id);
    assert.deepEqual(more, []);
    assert.match(a!.id, /^\d+$/);
    assert.deepEqual([a!.attempt, a!.workerId, a!.leaseToken, a!.startedAt, a!.outcome, a!.errorCode, a!.errorMessage, a!.errorStack, a!.retryDelayMs],
      [1, 'w-att', c!.leaseToken, c!.startedAt, 'failed', 'E_ATT', 'boom', 'Error: boom', 250]);
    assert.equal(a!.durationMs, a!.finishedAt!.getTime() - a!.startedAt.getTime());
  });

  it('an attempt row a schema-2 claim opened is closed in place by the finish and by a cancel: one row, not two', async () => {
    const s = make({ tablePrefix: 'old_' });
    await s.migrate();
    await s.insertJobs([job('old'), job('old')]);
    const [f, k] = await s.claimJobs({ workerId: 'w-old', types: ['old'], queues: null, limit: 2, leaseMs: 30_000 });
    for (const c of [f!, k!]) await openAsSchema2('old_', c.id);
    const [opened, ...synthesized] = await s.listAttempts(f!.id);
    assert.deepEqual([opened!.outcome, synthesized], ['running', []], 'the open row, not also one from the job row');
    assert.match(opened!.id, /^\d+$/);
    assert.deepEqual(await s.finishJobs([{ id: f!.id, leaseToken: f!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }]), [{ id: f!.id, applied: true }]);
    const [closed, ...more] = await s.listAttempts(f!.id);
    assert.deepEqual(more, []);
    assert.deepEqual([closed!.id, closed!.outcome, closed!.startedAt], [opened!.id, 'succeeded', f!.startedAt]);
    assert.equal(closed!.durationMs, closed!.finishedAt!.getTime() - closed!.startedAt.getTime());
    assert.equal((await s.cancelJob(k!.id)).applied, true);
    assert.deepEqual((await s.listAttempts(k!.id)).map((a) => [a.outcome, a.errorCode]), [['cancelled', 'CANCELLED']]);
    assert.deepEqual([await attemptRows('old_', f!.id), await attemptRows('old_', k!.id)], [1, 1]);
  });

  it('migrates a schema-2 database holding jobs to 3 (unique lease key, prune by finished_at), and again after a crash before its ledger row', async (t) => {
    const p = 'm2_';
    const [[v]] = (await admin.query('SELECT VERSION() AS v')) as unknown as [{ v: string }[]];
    const { collation } = checkServerVersion(v!.v);
    const c = await mysql.createConnection(dbUrl(db));
    t.after(() => c.end());
    // schema 2 as the migrations of that version left it
    await c.query(renderDdl(LEDGER_DDL, p, collation));
    for (const m of MYSQL_MIGRATIONS.filter((x) => x.version <= 2)) {
      for (const stmt of m.sql) await c.query(renderDdl(stmt, p, collation));
      await c.query(`INSERT INTO ${p}migrations (version, name, applied_at) VALUES (?, ?, UTC_TIMESTAMP(6))`, [m.version, m.name]);
    }
    const s = make({ tablePrefix: p });
    assert.equal(await s.schemaVersion(), 2);
    // what schema-2 workers leave behind: a running job with its open attempt row, a queued one
    await s.insertJobs([job('m2'), job('m2')]);
    const [old] = await s.claimJobs({ workerId: 'w2', types: ['m2'], queues: null, limit: 1, leaseMs: 30_000 });
    await openAsSchema2(p, old!.id);
    const keys = async (): Promise<string[]> => (await rowsOf(`SELECT CONCAT(TABLE_NAME, '.', INDEX_NAME, ' ', IF(NON_UNIQUE, '', 'unique '),
        GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX)) AS k FROM information_schema.STATISTICS
      WHERE TABLE_SCHEMA = ? AND INDEX_NAME IN ('m2_jobs_prune', 'm2_job_attempts_lease') GROUP BY TABLE_NAME, INDEX_NAME, NON_UNIQUE`, [db])).map((r) => String(r.k)).sort();
    assert.deepEqual(await keys(), ['m2_job_attempts.m2_job_attempts_lease job_id,lease_token', 'm2_jobs.m2_jobs_prune status,finished_at']);
    const res = await s.migrate();
    assert.deepEqual([res.from, res.to, res.applied.map((a) => a.version)], [2, LATEST_MYSQL_VERSION, [3, 9]]);
    const migrated = ['m2_job_attempts.m2_job_attempts_lease unique job_id,lease_token', 'm2_jobs.m2_jobs_prune finished_at'];
    assert.deepEqual(await keys(), migrated);
    // a crash after the DDL, before the ledger row: the next migrate runs 3 (and what follows) again without error
    await rowsOf(`DELETE FROM {db}.${p}migrations WHERE version >= 3`);
    assert.deepEqual((await s.migrate()).applied.map((a) => a.version), [3, 9]);
    assert.deepEqual(await keys(), migrated);
    // the jobs carry on: the open row closes in place, a new claim writes its row at the end
    await s.finishJobs([{ id: old!.id, leaseToken: old!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }]);
    const [fresh] = await s.claimJobs({ workerId: 'w3', types: ['m2'], queues: null, limit: 1, leaseMs: 30_000 });
    assert.equal(await attemptRows(p, fresh!.id), 0);
    await s.finishJobs([{ id: fresh!.id, leaseToken: fresh!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }]);
    for (const [id, worker] of [[old!.id, 'w2'], [fresh!.id, 'w3']] as const) {
      assert.deepEqual((await s.listAttempts(id)).map((a) => [a.workerId, a.outcome]), [[worker, 'succeeded']], `job ${id}`);
    }
    const [[plan]] = (await c.query(`EXPLAIN ${mysqlSql(p).pruneCandidates}`, [['succeeded'], 0, 10])) as unknown as [Record<string, unknown>[]];
    assert.deepEqual([plan!.type, plan!.key, /filesort/.test(String(plan!.Extra))], ['range', 'm2_jobs_prune', false], 'the prune reads a range of finished_at in order');
    assert.equal(await s.pruneJobs({ olderThanMs: 0, statuses: ['succeeded'], limit: 10 }), 2);
  });
});
