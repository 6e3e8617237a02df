/**
 * MySQL/MariaDB attempt rows: written once, when the attempt ends (the job row holds the running
 * one), and pruned with their jobs through a range of the prune index.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { jobsSql } from '../../src/storage/mysql/jobs.js';
import { tables } from '../../src/storage/mysql/sql.js';
import { serverFor } from '../support/databases.js';
import { job, throwawayDatabase } from './mysql-support.js';

const url = await serverFor('mysql', 'mysql specific: attempt rows');

describe('mysql specific: attempt rows', { skip: url === null }, () => {
  const server = throwawayDatabase(url);
  const { db, make } = server;
  let admin: mysql.Connection;
  before(() => {
    admin = server.adminConnection();
  });

  /** Rows of a table, by the admin connection. */
  const rowsOf = async (sql: string, values: unknown[] = []): Promise<Record<string, unknown>[]> =>
    (await admin.query({ sql: sql.replaceAll('{db}', `\`${db}\``), values }))[0] as Record<string, unknown>[];
  const attemptRows = async (prefix: string, id: string): Promise<number> =>
    Number((await rowsOf(`SELECT COUNT(*) AS n FROM {db}.${prefix}job_attempts WHERE job_id = ?`, [id]))[0]!.n);

  it('a claim writes no attempt row, attempts.list reads it from the job row; the finish writes one closed row', async () => {
    const s = make({ tablePrefix: 'att_' });
    await s.migrate();
    await s.jobs.insert({ jobs: [job('att')] });
    const [c] = await s.leases.claim({ workerId: 'w-att', types: ['att'], queues: null, limit: 1, leaseMs: 30_000 });
    assert.equal(await attemptRows('att_', c!.id), 0, 'the claim wrote no attempt row');
    assert.deepEqual(await s.attempts.list({ jobId: c!.id }), [{
      id: `running:${c!.id}`, jobId: c!.id, attempt: 1, workerId: 'w-att', leaseToken: c!.leaseToken, startedAt: c!.startedAt,
      finishedAt: null, durationMs: null, outcome: 'running', errorCode: null, errorMessage: null, errorStack: null, retryDelayMs: null,
      waitMs: c!.startedAt!.getTime() - c!.runAt.getTime(),
    }]);
    const error = { code: 'E_ATT', message: 'boom', stack: 'Error: boom' };
    await s.leases.finish({ items: [{ id: c!.id, leaseToken: c!.leaseToken, status: 'failed', runAfterMs: 0, error, attempt: { outcome: 'failed', error, retryDelayMs: 250 } }] });
    assert.equal(await attemptRows('att_', c!.id), 1, 'the finish wrote one row');
    const [a, ...more] = await s.attempts.list({ jobId: c!.id });
    assert.deepEqual(more, []);
    assert.match(a!.id, /^\d+$/);
    assert.deepEqual([a!.attempt, a!.workerId, a!.leaseToken, a!.startedAt, a!.outcome, a!.errorCode, a!.errorMessage, a!.errorStack, a!.retryDelayMs],
      [1, 'w-att', c!.leaseToken, c!.startedAt, 'failed', 'E_ATT', 'boom', 'Error: boom', 250]);
    assert.equal(a!.durationMs, a!.finishedAt!.getTime() - a!.startedAt.getTime());
  });

  it('an operator cancel of a running job writes its attempt row once, from the job row', async () => {
    const s = make({ tablePrefix: 'can_' });
    await s.migrate();
    await s.jobs.insert({ jobs: [job('can')] });
    const [c] = await s.leases.claim({ workerId: 'w-can', types: ['can'], queues: null, limit: 1, leaseMs: 30_000 });
    assert.equal((await s.jobs.cancel({ id: c!.id })).applied, true);
    const [a, ...more] = await s.attempts.list({ jobId: c!.id });
    assert.deepEqual(more, []);
    assert.deepEqual([a!.workerId, a!.leaseToken, a!.startedAt, a!.outcome, a!.errorCode], ['w-can', c!.leaseToken, c!.startedAt, 'cancelled', 'CANCELLED']);
    assert.equal(a!.durationMs, a!.finishedAt!.getTime() - a!.startedAt.getTime());
    assert.equal(await attemptRows('can_', c!.id), 1);
  });

  it('the prune reads a range of finished_at in order and deletes the jobs with their attempts', async (t) => {
    const p = 'pr_';
    const s = make({ tablePrefix: p });
    await s.migrate();
    await s.jobs.insert({ jobs: [job('pr'), job('pr')] });
    for (const c of await s.leases.claim({ workerId: 'w', types: ['pr'], queues: null, limit: 2, leaseMs: 30_000 })) {
      await s.leases.finish({ items: [{ id: c.id, leaseToken: c.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }] });
    }
    const c = await mysql.createConnection(server.dbUrl(db));
    t.after(() => c.end());
    // from the oldest, and after a cursor (finished_at, id)
    for (const [at, id] of [['1000-01-01 00:00:00.000', 0], ['2000-01-01 00:00:00.000', 7]] as const) {
      const [[plan]] = (await c.query(`EXPLAIN ${jobsSql(tables(p)).pruneCandidates}`, [['succeeded'], 0, at, at, id, 10])) as unknown as [Record<string, unknown>[]];
      assert.deepEqual([plan!.type, plan!.key, /filesort/.test(String(plan!.Extra))], ['range', `${p}jobs_prune`, false]);
    }
    assert.equal(await s.jobs.prune({ olderThanMs: 0, statuses: ['succeeded'], limit: 10 }), 2);
    assert.deepEqual(await rowsOf(`SELECT job_id FROM {db}.${p}job_attempts`), [], 'their attempts went with them');
  });
});
