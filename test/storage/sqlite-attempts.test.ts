/**
 * What only the SQLite adapter has to prove about attempt rows: none is written at claim time
 * (the job row holds the running attempt), one closed row is written by the write that ends the
 * attempt — a finish or an operator's cancel — and pruning takes them with their job.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import { job, tempFiles } from './sqlite-support.js';

const tempFile = tempFiles();

describe('sqlite specific: attempt rows', () => {
  function attemptRows(file: string, id: string): number {
    const raw = new Database(file, { readonly: true });
    try {
      return (raw.prepare('SELECT count(*) AS n FROM leasehold_job_attempts WHERE job_id = ?').get(Number(id)) as { n: number }).n;
    } finally {
      raw.close();
    }
  }

  it('a claim writes no attempt row, attempts.list reads it from the job row; the finish writes one closed row', async () => {
    const file = tempFile();
    let t = Date.UTC(2030, 0, 1);
    const s = sqliteStorage({ path: file, clock: () => t });
    await s.migrate();
    await s.jobs.insert({ jobs: [job('att')] });
    const [c] = await s.leases.claim({ workerId: 'w-att', types: ['att'], queues: null, limit: 1, leaseMs: 30_000 });
    assert.equal(attemptRows(file, c!.id), 0, 'the claim wrote no attempt row');
    assert.deepEqual(await s.attempts.list({ jobId: c!.id }), [{
      id: `running:${c!.id}`, jobId: c!.id, attempt: 1, workerId: 'w-att', leaseToken: c!.leaseToken, startedAt: c!.startedAt,
      finishedAt: null, durationMs: null, outcome: 'running', errorCode: null, errorMessage: null, errorStack: null, retryDelayMs: null,
      waitMs: 0,
    }]);
    t += 1234;
    const error = { code: 'E_ATT', message: 'boom', stack: 'Error: boom' };
    const res = await s.leases.finish({ items: [{ id: c!.id, leaseToken: c!.leaseToken, status: 'failed', runAfterMs: 0, error, attempt: { outcome: 'failed', error, retryDelayMs: 250 } }] });
    assert.deepEqual(res, [{ id: c!.id, applied: true }]);
    assert.equal(attemptRows(file, c!.id), 1, 'the finish wrote one row');
    const [a, ...more] = await s.attempts.list({ jobId: c!.id });
    assert.deepEqual(more, []);
    assert.match(a!.id, /^\d+$/);
    assert.deepEqual([a!.attempt, a!.workerId, a!.leaseToken, a!.startedAt, a!.finishedAt, a!.durationMs, a!.outcome, a!.errorCode, a!.errorMessage, a!.errorStack, a!.retryDelayMs],
      [1, 'w-att', c!.leaseToken, c!.startedAt, new Date(t), 1234, 'failed', 'E_ATT', 'boom', 'Error: boom', 250]);
    // a lost lease writes nothing
    assert.deepEqual(await s.leases.finish({ items: [{ id: c!.id, leaseToken: c!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }] }), [{ id: c!.id, applied: false }]);
    assert.equal(attemptRows(file, c!.id), 1);
    await s.close();
  });

  it('a cancel closes a running attempt as one cancelled row; pruning takes the rows with their jobs', async () => {
    const file = tempFile();
    let t = Date.UTC(2030, 0, 1);
    const s = sqliteStorage({ path: file, clock: () => t });
    await s.migrate();
    await s.jobs.insert({ jobs: [job('end'), job('end')] });
    const [f, k] = await s.leases.claim({ workerId: 'w-end', types: ['end'], queues: null, limit: 2, leaseMs: 30_000 });
    t += 50;
    assert.deepEqual(await s.leases.finish({ items: [{ id: f!.id, leaseToken: f!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }] }), [{ id: f!.id, applied: true }]);
    t += 25;
    assert.equal((await s.jobs.cancel({ id: k!.id })).applied, true);
    assert.deepEqual((await s.attempts.list({ jobId: k!.id })).map((a) => [a.workerId, a.leaseToken, a.outcome, a.errorCode, a.errorMessage, a.durationMs]),
      [['w-end', k!.leaseToken, 'cancelled', 'CANCELLED', 'cancelled by an operator', 75]]);
    assert.deepEqual([attemptRows(file, f!.id), attemptRows(file, k!.id)], [1, 1]);
    // a second cancel finds no running attempt to close
    assert.equal((await s.jobs.cancel({ id: k!.id })).applied, false);
    assert.equal(attemptRows(file, k!.id), 1);
    assert.equal(await s.jobs.prune({ olderThanMs: -1, statuses: ['succeeded', 'cancelled'], limit: 10 }), 2);
    assert.equal(attemptRows(file, f!.id) + attemptRows(file, k!.id), 0, 'attempts go with their jobs');
    await s.close();
  });
});
