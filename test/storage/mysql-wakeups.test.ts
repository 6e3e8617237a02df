/**
 * MySQL/MariaDB wake-ups (wakeups.ts): an idle worker that polls once an hour still runs a job
 * another process enqueues, because the enqueue interrupts its parked connection's sleep; it
 * parks again after its connection is killed; unsubscribing closes the parked connection.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { serverFor } from '../support/databases.js';
import { throwawayDatabase } from './mysql-support.js';
import { enqueueElsewhere, idleWorker } from './wakeups-support.js';

const url = await serverFor('mysql', 'mysql wake-ups');

const PARKED = `SELECT ID AS id FROM information_schema.PROCESSLIST WHERE DB = ? AND INSTR(INFO, '[leasehold wake leasehold_]') > 0`;

describe('mysql wake-ups: a parked connection interrupted by enqueues', { skip: url === null, timeout: 120_000 }, () => {
  const { db, dbUrl, make, adminConnection } = throwawayDatabase(url);

  /** The connections parked for wake-ups on the test database, once there are `n` of them (none of them `not`). */
  const parked = async (n: number, not?: number): Promise<number[]> => {
    for (;;) {
      const [rows] = await adminConnection().query(PARKED, [db]);
      const ids = (rows as { id: number }[]).map((r) => Number(r.id));
      if (ids.length === n && !ids.includes(not as number)) return ids;
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  it('a worker that never polls runs jobs enqueued by another process, also after its parked connection was killed', async () => {
    const storage = make({ poolSize: 4 });
    await storage.migrate();
    assert.equal(storage.capabilities.listenNotify, true);
    const { worker, ran } = await idleWorker(storage, 'pushed');
    try {
      const [id] = await parked(1);
      let next = ran();
      await enqueueElsewhere(dbUrl(db), 'pushed');
      assert.equal(await next, 1);

      await adminConnection().query('KILL CONNECTION ?', [id]);
      // parked again on a new connection
      await parked(1, id);
      next = ran();
      await enqueueElsewhere(dbUrl(db), 'pushed');
      assert.equal(await next, 2);
    } finally {
      await worker.stop({ deadlineMs: 5_000 });
    }
    assert.deepEqual(await parked(0), [], 'the worker stopped: nothing parked');
  });

  it('an enqueue right after another still wakes: its KILL waits out the gap, then goes', async () => {
    const storage = make({ poolSize: 3 });
    const other = make();
    await storage.migrate();
    const due = { queue: 'default', type: 'x', payload: {}, priority: 0, runAfterMs: 0, maxAttempts: 1, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000 };
    let wakes = 0;
    let second: () => void = () => {};
    const woken = new Promise<void>((r) => (second = r));
    const unsubscribe = await storage.subscribe({ onWake: () => {
      wakes += 1;
      // enqueued as the first wake arrives: within the gap after the first KILL, unless this wake came late
      if (wakes === 1) void other.jobs.insert({ jobs: [due] });
      else second();
    } });
    await parked(1);
    await other.jobs.insert({ jobs: [due] });
    await woken;
    await unsubscribe();
  });

  it('subscribe wakes on an operator retry from another storage; unsubscribe closes the parked connection', async () => {
    assert.equal(make({ poolSize: 2 }).capabilities.listenNotify, false, 'a pool of 2 keeps both connections for the worker');
    const storage = make({ poolSize: 3 });
    const other = make();
    await storage.migrate();
    let wakes = 0;
    let woken: () => void = () => {};
    const unsubscribe = await storage.subscribe({ onWake: () => {
      wakes += 1;
      woken();
    } });
    await parked(1);
    const [r] = await other.jobs.insert({ jobs: [{ queue: 'default', type: 'x', payload: {}, priority: 0, runAfterMs: 0, maxAttempts: 1, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000 }] });
    const [c] = await other.leases.claim({ workerId: 'w', types: ['x'], queues: null, limit: 1, leaseMs: 30_000 });
    await other.leases.finish({ items: [{ id: c!.id, leaseToken: c!.leaseToken, status: 'dead', attempt: { outcome: 'dead' } }] });
    await parked(1);
    const before = wakes;
    await new Promise<void>((resolve) => {
      woken = () => wakes > before && resolve();
      void other.jobs.retry({ id: r!.job.id });
    });
    await unsubscribe();
    assert.deepEqual(await parked(0), []);
    // the pool is whole again: three queries hold a connection each at once
    await Promise.all([storage.now(), storage.queues.counts(), storage.jobs.get({ id: r!.job.id })]);
  });
});
