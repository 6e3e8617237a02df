/**
 * What only the PostgreSQL adapter has to prove about the caller's transaction and
 * notifications: enqueue and finish inside the caller's transaction (issue 3), NOTIFY on
 * commit only, and subscribe() wake-ups that survive a killed listener.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import pg from 'pg';
import { ValidationError } from '../../src/core/errors.js';
import { NOTIFY_CHANNEL, postgresStorage } from '../../src/storage/postgres/index.js';
import { serverFor } from '../support/databases.js';
import { job, postgresFixtures, sleep } from './postgres-support.js';

const url = await serverFor('postgres', 'postgres specific: transactions and notifications');

describe('postgres specific: transactions and notifications', { skip: url === null }, () => {
  const { made, schemas, fresh, client } = postgresFixtures(url);

  it('transactional enqueue: rolled back → no job; committed → the job exists', async () => {
    const s = fresh();
    await s.migrate();
    const c = await client();
    await c.query('BEGIN');
    const [rolled] = await s.jobs.insert({ jobs: [job('tx-rollback')], tx: c });
    assert.ok(rolled?.created);
    await c.query('ROLLBACK');
    assert.equal(await s.jobs.get({ id: rolled.job.id }), null);

    await c.query('BEGIN');
    const [kept] = await s.jobs.insert({ jobs: [job('tx-commit')], tx: c });
    assert.ok(kept);
    assert.equal(await s.jobs.get({ id: kept.job.id }), null, 'invisible to others before COMMIT');
    await c.query('COMMIT');
    assert.equal((await s.jobs.get({ id: kept.job.id }))?.status, 'queued');
  });

  it('transactional finish: the fenced finish lands iff the caller commits', async () => {
    const s = fresh();
    await s.migrate();
    await s.jobs.insert({ jobs: [job('tx-finish')] });
    const [claimed] = await s.leases.claim({ workerId: 'w', types: ['tx-finish'], queues: null, limit: 1, leaseMs: 30_000 });
    assert.ok(claimed);
    const c = await client();
    const fin = { id: claimed.id, leaseToken: claimed.leaseToken, status: 'succeeded' as const, attempt: { outcome: 'succeeded' as const } };
    await c.query('BEGIN');
    assert.deepEqual(await s.leases.finish({ items: [fin], tx: c }), [{ id: claimed.id, applied: true }]);
    await c.query('ROLLBACK');
    assert.equal((await s.jobs.get({ id: claimed.id }))?.status, 'running');
    await c.query('BEGIN');
    assert.deepEqual(await s.leases.finish({ items: [fin], tx: c }), [{ id: claimed.id, applied: true }]);
    await c.query('COMMIT');
    assert.equal((await s.jobs.get({ id: claimed.id }))?.status, 'succeeded');
    assert.equal((await s.attempts.list({ jobId: claimed.id }))[0]?.outcome, 'succeeded');
  });

  it('tx must be a client, not a pool or something else', async () => {
    const s = fresh();
    await s.migrate();
    await assert.rejects(s.jobs.insert({ jobs: [job('x')], tx: s.pool }), ValidationError);
    await assert.rejects(s.jobs.insert({ jobs: [job('x')], tx: {} }), ValidationError);
  });

  it('an insert of a due job notifies on commit, a rolled-back one never', async () => {
    const s = fresh();
    await s.migrate();
    const listener = await client();
    const got: (string | undefined)[] = [];
    const marks: string[] = [];
    listener.on('notification', (n) => {
      if (n.channel === NOTIFY_CHANNEL && n.payload === s.schema) got.push(n.payload);
      if (n.channel === NOTIFY_CHANNEL && n.payload?.startsWith('mark ')) marks.push(n.payload);
    });
    await listener.query(`LISTEN ${NOTIFY_CHANNEL}`);
    const c = await client();
    // a listener gets notifications in commit order: once a mark sent after some writes arrives,
    // every notification those writes sent has arrived before it
    const mark = async (name: string) => {
      await c.query('SELECT pg_notify($1, $2)', [NOTIFY_CHANNEL, `mark ${name}`]);
      for (let i = 0; i < 500 && !marks.includes(`mark ${name}`); i++) await sleep(20);
      assert.ok(marks.includes(`mark ${name}`), `the ${name} mark arrived`);
    };
    await c.query('BEGIN');
    await s.jobs.insert({ jobs: [job('n')], tx: c });
    await c.query('ROLLBACK');
    await s.jobs.insert({ jobs: [job('n', { runAfterMs: 60_000 })] });
    await mark('first');
    assert.equal(got.length, 0, 'no notification for a rollback or a job due later');
    await s.jobs.insert({ jobs: [job('n'), job('n')] });
    await mark('second');
    assert.equal(got.length, 1, 'one notification per committed insert of due jobs');
  });

  it('subscribe: wakes on enqueue and retry from another connection, reconnects after the listener is killed', async () => {
    const appName = `lh_test_${randomBytes(4).toString('hex')}`;
    const pool = new pg.Pool({ connectionString: url as string, application_name: appName, max: 2 });
    pool.on('error', () => {});
    const s = postgresStorage({ pool, schema: `lh_t_${randomBytes(6).toString('hex')}` });
    made.push(s);
    schemas.push(s.schema);
    await s.migrate();
    const other = fresh(s.schema);
    let wakes = 0;
    const unsubscribe = await s.subscribe({ onWake: () => (wakes += 1) });
    const waitFor = async (n: number, what: string) => {
      // up to 10 s: a reconnect after the kill, on a busy machine
      for (let i = 0; i < 500 && wakes < n; i++) await sleep(20);
      assert.ok(wakes >= n, `${what}: ${wakes} wake-ups, expected >= ${n}`);
    };
    await other.jobs.insert({ jobs: [job('sub')] });
    await waitFor(1, 'enqueue');
    const [c] = await other.leases.claim({ workerId: 'w', types: ['sub'], queues: null, limit: 1, leaseMs: 30_000 });
    await other.leases.finish({ items: [{ id: c!.id, leaseToken: c!.leaseToken, status: 'dead', attempt: { outcome: 'dead' } }] });
    const before = wakes;
    await other.jobs.retry({ id: c!.id });
    await waitFor(before + 1, 'retry');

    const killer = await client();
    const killed = await killer.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [`${appName}-listener`]);
    assert.equal(killed.rowCount, 1, 'one listener connection');
    const afterKill = wakes;
    await waitFor(afterKill + 1, 'catch-up wake after reconnecting');
    const reconnected = wakes;
    await other.jobs.insert({ jobs: [job('sub')] });
    await waitFor(reconnected + 1, 'enqueue after reconnect');

    await unsubscribe();
    const done = wakes;
    await other.jobs.insert({ jobs: [job('sub')] });
    await sleep(150);
    assert.equal(wakes, done, 'no wake-ups after unsubscribe');
    const left = await killer.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [`${appName}-listener`]);
    assert.equal(left.rows[0]?.n, 0, 'the listener connection is closed');
    await pool.end();
  });
});
