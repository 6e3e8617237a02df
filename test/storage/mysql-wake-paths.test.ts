/**
 * Every way of making jobs due wakes a parked MySQL/MariaDB subscriber (wakeups.ts), not only a
 * plain enqueue: a workflow's insert, a batch's callback (closed, or completed by a finish or a cancel), a finish
 * that makes a job due again (a retry due now, children released), an operator's bulk retry, a
 * schedule's run-now and a resumed queue. Each test prepares through the subscribed storage
 * (whose own writes never wake its own parked connection) and makes the job due through another
 * storage; on each wake the subscriber claims, and the test ends once a claim brings the job: a
 * wake sent before the job was committed brings nothing, so the wake must come after it.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import type { ClaimedJob, Storage } from '../../src/core/storage.js';
import { serverFor } from '../support/databases.js';
import { job, throwawayDatabase } from './mysql-support.js';

const url = await serverFor('mysql', 'mysql wake paths');

/** Far longer than a wake takes; reached only when none comes. */
const DEADLINE_MS = 20_000;

const uniq = (p: string): string => `${p}-${randomBytes(4).toString('hex')}`;

describe('mysql wake-ups: every path that makes jobs due wakes a parked subscriber', { skip: url === null, timeout: 300_000 }, () => {
  const { make, adminConnection, db } = throwawayDatabase(url);
  let s: Storage;
  let other: Storage;
  let ready: Promise<void> | null = null;
  const setup = (): Promise<void> =>
    (ready ??= (async () => {
      s = make({ poolSize: 4 });
      other = make({ poolSize: 4 });
      await s.migrate();
    })());

  /** Subscribe `s`; resolves with the first job of `type` a claim made on a wake brings, after `act` ran. */
  async function wokenToClaim(type: string, act: () => Promise<unknown>): Promise<ClaimedJob> {
    let done: (j: ClaimedJob) => void = () => {};
    const got = new Promise<ClaimedJob>((r) => (done = r));
    let claiming = false;
    let again = false;
    const claim = async (): Promise<void> => {
      if (claiming) return void (again = true);
      claiming = true;
      do {
        again = false;
        const [j] = await s.leases.claim({ workerId: 'w', types: [type], queues: null, limit: 1, leaseMs: 60_000 });
        if (j) done(j);
      } while (again);
      claiming = false;
    };
    const unsubscribe = await s.subscribe!({ onWake: () => void claim() });
    try {
      await parked();
      await act();
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no wake brought a ${type} job`)), DEADLINE_MS)));
      try {
        return await Promise.race([got, late]);
      } finally {
        clearTimeout(timer);
      }
    } finally {
      await unsubscribe();
    }
  }

  /** Once the subscriber's connection is parked (an enqueuer lists it from then on). */
  const parked = async (): Promise<void> => {
    for (;;) {
      const [rows] = await adminConnection().query(`SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ? AND INSTR(INFO, '[leasehold wake leasehold_]') > 0`, [db]);
      if ((rows as unknown[]).length === 1) return;
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  /** A job of `type` inserted and claimed through the subscriber. */
  const running = async (type: string): Promise<ClaimedJob> => {
    await s.jobs.insert({ jobs: [job(type)] });
    const [c] = await s.leases.claim({ workerId: 'w', types: [type], queues: null, limit: 1, leaseMs: 60_000 });
    assert.ok(c);
    return c;
  };


  it('a finish that retries at once wakes', async () => {
    await setup();
    const type = uniq('retry-now');
    const c = await running(type);
    await wokenToClaim(type, () => other.leases.finish({ items: [{ id: c.id, leaseToken: c.leaseToken, status: 'failed', runAfterMs: 0, attempt: { outcome: 'failed' } }] }));
  });

  it('a parent\'s success releasing its child wakes', async () => {
    await setup();
    const [parent, child] = [uniq('parent'), uniq('child')];
    await s.workflows.insertFlow({ jobs: [{ ...job(parent), parents: [] }, { ...job(child), parents: [0] }], onParentFailure: 'cancel' });
    const c = await running(parent);
    await wokenToClaim(child, () => other.leases.finish({ items: [{ id: c.id, leaseToken: c.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }] }));
  });

  it('a workflow\'s insert wakes', async () => {
    await setup();
    const type = uniq('flow');
    await wokenToClaim(type, () => other.workflows.insertFlow({ jobs: [{ ...job(type), parents: [] }], onParentFailure: 'cancel' }));
  });

  it('a batch\'s callback wakes: closed with nothing pending, completed by a finish, completed by a cancel', async () => {
    await setup();
    const batch = async (type: string) => s.workflows.createBatch({ callback: job(type, { payload: {} }), onSuccessOnly: false });
    const closed = uniq('cb-close');
    const b1 = await batch(closed);
    await wokenToClaim(closed, () => other.workflows.closeBatch({ batchId: b1.id }));

    const finished = uniq('cb-finish');
    const b2 = await batch(finished);
    const member = uniq('member');
    await s.workflows.insertFlow({ jobs: [{ ...job(member), parents: [] }], onParentFailure: 'cancel', batchId: b2.id });
    await s.workflows.closeBatch({ batchId: b2.id });
    const c = await running(member);
    await wokenToClaim(finished, () => other.leases.finish({ items: [{ id: c.id, leaseToken: c.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }] }));

    const cancelled = uniq('cb-cancel');
    const b3 = await batch(cancelled);
    const [m] = await s.workflows.insertFlow({ jobs: [{ ...job(uniq('member')), parents: [] }], onParentFailure: 'cancel', batchId: b3.id });
    await s.workflows.closeBatch({ batchId: b3.id });
    await wokenToClaim(cancelled, () => other.jobs.cancel({ id: m!.id }));
  });

  it('an operator\'s bulk retry wakes', async () => {
    await setup();
    const type = uniq('bulk');
    const c = await running(type);
    await s.leases.finish({ items: [{ id: c.id, leaseToken: c.leaseToken, status: 'dead', attempt: { outcome: 'dead' } }] });
    await wokenToClaim(type, () => other.jobs.bulk({ action: 'retry', filter: { type }, afterId: null, throughId: c.id, limit: 10, bulkId: uniq('b'), actor: 'test' }));
  });

  it('a schedule\'s run-now and a resumed queue wake', async () => {
    await setup();
    const type = uniq('sched');
    const name = uniq('s');
    await s.schedules.upsert({ items: [{ name, cron: null, everyMs: 3_600_000, timezone: 'UTC', type, payload: {}, queue: 'default', priority: 0, maxAttempts: 3, misfire: 'skip', misfireWindowMs: null, misfireMax: 1, enabled: true, source: 'cli', nextRunAt: new Date(Date.now() + 3_600_000) }] });
    await wokenToClaim(type, () => other.schedules.runNow({ name, job: { queue: 'default', type, payload: {}, priority: 0, maxAttempts: 3, timeoutMs: 60_000, maxRuntimeMs: 600_000 } }));

    const paused = uniq('resume');
    const queue = uniq('q');
    await s.queues.pause({ queue });
    await s.jobs.insert({ jobs: [job(paused, { queue })] });
    await wokenToClaim(paused, () => other.queues.resume({ queue }));
  });
});
