/**
 * Schedules through the runtime: a Worker given `schedules` syncs and fires them, and the jobs
 * carry the schedule's name and the slot they stand for; Worker.drain (the tick / crontab mode)
 * fires due schedules before it looks for jobs; invalid cron, an unknown time zone or a zero
 * interval are typed errors through every entry point, with nothing written.
 *
 * Where a slot must fall due without waiting for it, the memory storage's injectable clock plays
 * the database's clock; the rest run on every storage.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ScheduleInput } from '../../src/core/index.js';
import { ValidationError } from '../../src/core/index.js';
import type { Storage } from '../../src/core/storage.js';
import type { JobContext } from '../../src/runtime/job-definition.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Scheduler, syncSchedules, upsertSchedule } from '../../src/runtime/scheduler.js';
import { Worker } from '../../src/runtime/worker.js';
import { memoryStorage } from '../../src/storage/memory/index.js';
import { LogCapture, STORAGE_KINDS, describeEachKind, openTestStorage, waitFor } from './support.js';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function clocked(): Promise<{ storage: Storage; skip: (ms: number) => void }> {
  let skew = 0;
  const storage = memoryStorage({ clock: () => Date.now() + skew });
  await storage.migrate();
  cleanups.push(() => storage.close());
  return { storage, skip: (ms) => (skew += ms) };
}

function recorder(type: string) {
  const seen: { id: string; scheduleName: string | undefined; slotAt: Date | undefined }[] = [];
  const def = defineJob({
    type,
    handler: (_p: unknown, ctx: JobContext) => {
      seen.push({ id: ctx.job.id, scheduleName: ctx.job.scheduleName, slotAt: ctx.job.slotAt });
    },
  });
  return { def, seen };
}

const quiet = () => new LogCapture().logger;

// the slots fall due by moving the database's clock, which a server's clock cannot
describe('Worker with schedules (memory)', () => {
  test('syncs the declared schedules on start and fires them; each job carries scheduleName and slotAt', { timeout: 15_000 }, async () => {
    const { storage, skip } = await clocked();
    const { def, seen } = recorder('beat');
    const w = new Worker({
      storage, jobs: [def], concurrency: 2, pollIntervalMs: 20, sweeper: false, schedulerIntervalMs: 20, logger: quiet(),
      schedules: [{ name: 'every-minute', type: 'beat', cron: '* * * * *' }],
    });
    cleanups.push(() => w.stop({ deadlineMs: 500 }).then(() => undefined));
    await w.start();
    const [row] = await storage.schedules.list();
    assert.equal(row?.name, 'every-minute');
    assert.equal(row?.source, 'code');
    const slot = row!.nextRunAt!;
    assert.equal(slot.getTime() % 60_000, 0, 'the first slot is a whole minute');
    assert.equal(seen.length, 0, 'nothing fires before the slot');
    skip(slot.getTime() - Date.now() + 1); // the database clock reaches the slot
    await waitFor(() => seen.length >= 1, 10_000, 'the scheduled job to run');
    assert.deepEqual(seen[0]?.scheduleName, 'every-minute');
    assert.equal(seen[0]?.slotAt?.getTime(), slot.getTime(), 'the job stands for its slot');
    const after1 = await storage.schedules.get({ name: 'every-minute' });
    assert.equal(after1?.nextRunAt?.getTime(), slot.getTime() + 60_000, 'next_run_at advanced from the slot by one period');
    assert.equal(after1?.lastSlotAt?.getTime(), slot.getTime());
    skip(60_000);
    await waitFor(() => seen.length >= 2, 10_000, 'the next slot to run');
    assert.equal(seen[1]?.slotAt?.getTime(), slot.getTime() + 60_000);
    const jobs = (await storage.jobs.list({ type: 'beat', limit: 10 })).filter((j) => j.scheduleName === 'every-minute');
    assert.equal(jobs.length, 2, 'one job per slot');
  });

  test('drain (tick mode) fires due schedules first, then runs the jobs they enqueued, and exits', { timeout: 15_000 }, async () => {
    const { storage, skip } = await clocked();
    const { def, seen } = recorder('nightly');
    const row = await upsertSchedule(storage, { name: 'nightly-cleanup', type: 'nightly', cron: '0 2 * * *', timezone: 'Europe/Warsaw' });
    skip(row.nextRunAt!.getTime() - Date.now() + 5_000);
    const w = new Worker({ storage, jobs: [def], pollIntervalMs: 20, sweeper: false, logger: quiet() });
    const report = await w.drain({ maxMs: 10_000 });
    assert.equal(report.timedOut, false);
    assert.equal(report.processed, 1, 'the job the due slot enqueued ran in the same drain');
    assert.equal(seen[0]?.scheduleName, 'nightly-cleanup');
    assert.equal(seen[0]?.slotAt?.getTime(), row.nextRunAt!.getTime());
    const after1 = await storage.schedules.get({ name: 'nightly-cleanup' });
    assert.ok(after1!.nextRunAt!.getTime() > row.nextRunAt!.getTime(), 'next_run_at moved on');
    // nothing due any more: a second drain enqueues nothing
    const again = await new Worker({ storage, jobs: [def], pollIntervalMs: 20, sweeper: false, logger: quiet() }).drain({ maxMs: 5_000 });
    assert.equal(again.processed, 0);
  });
});

await describeEachKind("Worker with schedules, the database's own clock", STORAGE_KINDS, (kind) => {
  test('drain with `schedules` syncs them (waits for the first 1 s slot)', { timeout: 15_000 }, async () => {
    const { storage, cleanup } = await openTestStorage(kind);
    cleanups.push(cleanup);
    const { def, seen } = recorder('sec');
    // misfire 'all': a first tick later than the default 3 s grace (a slow machine) still fires the due slot
    await syncSchedules(storage, [{ name: 'each-second', type: 'sec', everyMs: 1_000, misfire: 'all' }]);
    const first = (await storage.schedules.get({ name: 'each-second' }))!.nextRunAt!;
    await waitFor(async () => (await storage.now()).getTime() >= first.getTime(), 5_000, 'the first slot to pass');
    const report = await new Worker({
      storage, jobs: [def], pollIntervalMs: 20, sweeper: false, logger: quiet(), schedules: [{ name: 'each-second', type: 'sec', everyMs: 1_000, misfire: 'all' }],
    }).drain({ maxMs: 10_000 });
    assert.ok(report.processed >= 1);
    assert.equal(seen[0]?.scheduleName, 'each-second');
    assert.equal(seen[0]?.slotAt?.getTime(), first.getTime(), 're-syncing an unchanged schedule kept its next_run_at: the due slot fired');
  });
});

const BAD: [string, ScheduleInput, RegExp][] = [
  ['invalid cron', { name: 'bad', type: 't', cron: '61 * * * *' }, /cron/],
  ['cron with 4 fields', { name: 'bad', type: 't', cron: '* * * *' }, /5 fields/],
  ['cron that never fires', { name: 'bad', type: 't', cron: '0 0 30 2 *' }, /./],
  ['unknown time zone', { name: 'bad', type: 't', cron: '0 2 * * *', timezone: 'Europe/Atlantis' }, /time zone/],
  ['zero interval', { name: 'bad', type: 't', everyMs: 0 }, /every/],
  ['negative interval', { name: 'bad', type: 't', everyMs: -1000 }, /every/],
  ['both cron and interval', { name: 'bad', type: 't', cron: '* * * * *', everyMs: 60_000 }, /exactly one/],
  ['neither cron nor interval', { name: 'bad', type: 't' }, /exactly one/],
];
const isInvalid = (re: RegExp) => (e: unknown) => e instanceof ValidationError && e.code === 'INVALID_SCHEDULE' && re.test(e.message);

await describeEachKind('bad schedules: typed errors, nothing written', STORAGE_KINDS, (kind) => {
  let storage: Storage;
  before(async () => {
    const opened = await openTestStorage(kind);
    cleanups.push(opened.cleanup);
    storage = opened.storage;
  });

  for (const [what, input, re] of BAD) {
    test(`${what}: upsertSchedule, syncSchedules, a Worker's and a Scheduler's start all reject; no schedule written`, async () => {
      await upsertSchedule(storage, { name: 'good', type: 't', everyMs: 60_000 }, 'code');
      const before = await storage.schedules.list();
      await assert.rejects(upsertSchedule(storage, input), isInvalid(re));
      // one bad declaration among good ones: the whole sync is refused, the existing one stays
      await assert.rejects(syncSchedules(storage, [{ name: 'other', type: 't', everyMs: 5_000 }, input]), isInvalid(re));
      await assert.rejects(new Scheduler({ storage, schedules: [input], logger: quiet() }).start(), isInvalid(re));
      const w = new Worker({ storage, jobs: [defineJob({ type: 't', handler: () => {} })], sweeper: false, logger: quiet(), schedules: [input] });
      await assert.rejects(w.start(), isInvalid(re));
      await w.stop({ deadlineMs: 100 });
      assert.deepEqual(await storage.schedules.list(), before, 'no schedule added, changed or removed');
      assert.equal((await storage.queues.counts()).reduce((a, c) => a + c.count, 0), 0, 'no job written');
    });
  }
});
