/**
 * What only the SQLite adapter has to prove about attempt rows: none is written at claim time
 * (the job row holds the running attempt), one closed row is written by the write that ends the
 * attempt — a failure or an operator's cancel — none by a success (the job row keeps it, and
 * every read of attempts finds it there), and pruning takes them with their job.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { CHART_RANGES, binOf } from '../../src/core/charts.js';
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
    assert.deepEqual([attemptRows(file, f!.id), attemptRows(file, k!.id)], [0, 1], 'the success kept its attempt in its job row');
    // a second cancel finds no running attempt to close
    assert.equal((await s.jobs.cancel({ id: k!.id })).applied, false);
    assert.equal(attemptRows(file, k!.id), 1);
    assert.equal(await s.jobs.prune({ olderThanMs: -1, statuses: ['succeeded', 'cancelled'], limit: 10 }), 2);
    assert.equal(attemptRows(file, f!.id) + attemptRows(file, k!.id), 0, 'attempts go with their jobs');
    await s.close();
  });

  for (const driver of ['better-sqlite3', 'node:sqlite'] as const) it(`a success writes no attempt row: its job row keeps the attempt, which list, outcomes, the series and the rollups read like any other (${driver})`, async () => {
    const file = tempFile();
    const t0 = Date.UTC(2030, 0, 1, 10, 7);
    let t = t0;
    const s = sqliteStorage({ path: file, clock: () => t, driver });
    await s.migrate();
    await s.jobs.insert({ jobs: [job('ok'), job('ok'), job('ok')] });
    t += 40;
    const [a, b, c] = await s.leases.claim({ workerId: 'w-ok', types: ['ok'], queues: null, limit: 3, leaseMs: 100 });
    t += 1500;
    // a: the batched plain success; b: an item-by-item success (only if its lease expired); c: a failure, retried
    const res = await s.leases.finish({ items: [
      { id: a!.id, leaseToken: a!.leaseToken, status: 'succeeded', result: '{"n":1}', attempt: { outcome: 'succeeded' } },
      { id: b!.id, leaseToken: b!.leaseToken, status: 'succeeded', onlyIfExpired: true, attempt: { outcome: 'succeeded' } },
      { id: c!.id, leaseToken: c!.leaseToken, status: 'failed', runAfterMs: 0, error: { code: 'E', message: 'm' }, attempt: { outcome: 'failed', error: { code: 'E', message: 'm' } } },
    ] });
    assert.deepEqual(res.map((r) => r.applied), [true, true, true]);
    assert.deepEqual([attemptRows(file, a!.id), attemptRows(file, b!.id), attemptRows(file, c!.id)], [0, 0, 1]);
    const held = (x: typeof a) => ({
      id: `succeeded:${x!.id}`, jobId: x!.id, attempt: 1, workerId: 'w-ok', leaseToken: x!.leaseToken, startedAt: new Date(t0 + 40),
      finishedAt: new Date(t), durationMs: 1500, outcome: 'succeeded', errorCode: null, errorMessage: null, errorStack: null, retryDelayMs: null, waitMs: 40,
    });
    assert.deepEqual(await s.attempts.list({ jobId: a!.id }), [held(a)]);
    assert.deepEqual(await s.attempts.list({ jobId: b!.id }), [held(b)]);
    // the job view shows a lease only while it runs, as on every adapter
    const got = await s.jobs.get({ id: a!.id });
    assert.deepEqual([got!.status, got!.lockedBy, got!.leaseToken, got!.lockedUntil], ['succeeded', null, null, null]);
    // c runs again and succeeds: its failed attempt is a row, its success the job row, in that order
    t += 10;
    const [c2] = await s.leases.claim({ workerId: 'w-ok2', types: ['ok'], queues: null, limit: 1, leaseMs: 30_000 });
    t += 20;
    assert.deepEqual((await s.leases.finish({ items: [{ id: c2!.id, leaseToken: c2!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }] }))[0]?.applied, true);
    assert.deepEqual((await s.attempts.list({ jobId: c!.id })).map((x) => [x.attempt, x.workerId, x.outcome, x.durationMs]), [[1, 'w-ok', 'failed', 1500], [2, 'w-ok2', 'succeeded', 20]]);
    assert.deepEqual(await s.attempts.outcomes({ sinceMs: 60_000 }), [
      { type: 'ok', queue: 'default', outcome: 'failed', count: 1 },
      { type: 'ok', queue: 'default', outcome: 'succeeded', count: 3 },
    ]);
    const series = await s.attempts.series(CHART_RANGES.hour);
    const total = (xs: readonly { count: number }[]) => xs.reduce((n, x) => n + x.count, 0);
    const succeeded = series.outcomes.filter((x) => x.outcome === 'succeeded');
    assert.deepEqual([total(succeeded), total(series.outcomes), total(series.runTime), total(series.wait), total(series.failures)], [3, 4, 4, 4, 1]);
    // three attempts of 1.5 s (two successes, the failure) and the success of 20 ms, in their run-time bins
    const inBin = (ms: number) => total(series.runTime.filter((x) => x.bin === binOf(ms)));
    assert.deepEqual([inBin(1500), inBin(20)], [3, 1]);
    // a success that moves run_at (the contract allows it) writes its row and clears the lease, counted once
    await s.jobs.insert({ jobs: [job('ok')] });
    const [d] = await s.leases.claim({ workerId: 'w-ok', types: ['ok'], queues: null, limit: 1, leaseMs: 30_000 });
    assert.equal((await s.leases.finish({ items: [{ id: d!.id, leaseToken: d!.leaseToken, status: 'succeeded', runAfterMs: 60_000, attempt: { outcome: 'succeeded' } }] }))[0]?.applied, true);
    assert.equal(attemptRows(file, d!.id), 1);
    assert.deepEqual((await s.attempts.list({ jobId: d!.id })).map((x) => [x.workerId, x.outcome, x.waitMs]), [['w-ok', 'succeeded', 0]]);
    // an hour on, all of it is in closed 15-minute slots: the rollups count each attempt once
    t += 3_600_000;
    const day = await s.attempts.series(CHART_RANGES.day);
    assert.deepEqual([total(day.outcomes.filter((x) => x.outcome === 'succeeded')), total(day.outcomes), total(day.runTime), total(day.wait)], [4, 5, 5, 5]);
    assert.deepEqual([total((await s.attempts.series(CHART_RANGES.day)).outcomes)], [5], 'read again from the rollups alone');
    await s.close();
  });
});
