/**
 * Schedules: upsert/sync semantics, the compare-and-set on next_run_at, and one job per
 * (schedule, slot) under concurrent schedules.fire calls from several connections.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FireScheduleParams, ScheduledJob, ScheduleUpsert } from '../../src/core/schedules.js';
import type { Storage } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { uniq, useDb } from './helpers.js';

const T0 = Date.UTC(2030, 0, 1, 0, 0, 0);

export function scheduleOf(name: string, over: Partial<ScheduleUpsert> = {}): ScheduleUpsert {
  return {
    name, cron: null, everyMs: 1000, timezone: 'UTC', type: 'sched-job', payload: { from: name }, queue: 'default', priority: 0,
    maxAttempts: 3, misfire: 'skip', misfireWindowMs: null, misfireMax: 100, enabled: true, source: 'cli', nextRunAt: new Date(T0), ...over,
  };
}

const JOB: ScheduledJob = { queue: 'default', type: 'sched-job', payload: { x: 1 }, priority: 0, maxAttempts: 3, timeoutMs: 60_000, maxRuntimeMs: 600_000 };

function fire(name: string, expected: number, slots: number[], next: number): FireScheduleParams {
  return { name, expectedNextRunAt: new Date(expected), nextRunAt: new Date(next), slots: slots.map((s) => new Date(s)), job: JOB };
}

async function connections(connectAnother: () => Promise<Storage>, n: number): Promise<Storage[]> {
  const out: Storage[] = [];
  for (let i = 0; i < n; i++) out.push(await connectAnother());
  return out;
}

export function scheduleTests(h: ConformanceHarness): void {
  describe('schedules', () => {
    const db = useDb(h);

    it('upsert inserts every field; a second upsert changes fields but keeps enabled, and next_run_at unless the timing changed', async () => {
      const s = db.storage;
      const name = uniq('sch');
      const [a] = await s.schedules.upsert({ items: [scheduleOf(name, { cron: '*/5 * * * *', everyMs: null, timezone: 'Europe/Warsaw', misfire: 'all', misfireWindowMs: 3_600_000, misfireMax: 7 })] });
      assert.ok(a);
      assert.deepEqual(
        { ...a, createdAt: undefined, updatedAt: undefined },
        { ...scheduleOf(name, { cron: '*/5 * * * *', everyMs: null, timezone: 'Europe/Warsaw', misfire: 'all', misfireWindowMs: 3_600_000, misfireMax: 7 }), lastRunAt: null, lastSlotAt: null, createdAt: undefined, updatedAt: undefined },
      );
      assert.deepEqual(await s.schedules.get({ name }), a);
      await s.schedules.setEnabled({ name, enabled: false });
      const [b] = await s.schedules.upsert({ items: [scheduleOf(name, { cron: '*/5 * * * *', everyMs: null, timezone: 'Europe/Warsaw', payload: { v: 2 }, priority: 5, nextRunAt: new Date(T0 + 999) })] });
      assert.equal(b?.enabled, false, 'operator disable survives an upsert');
      assert.deepEqual(b?.payload, { v: 2 });
      assert.equal(b?.priority, 5);
      assert.equal(b?.nextRunAt?.getTime(), T0, 'same timing: next_run_at kept');
      const [c] = await s.schedules.upsert({ items: [scheduleOf(name, { cron: '*/10 * * * *', everyMs: null, timezone: 'Europe/Warsaw', nextRunAt: new Date(T0 + 600_000) })] });
      assert.equal(c?.nextRunAt?.getTime(), T0 + 600_000, 'timing changed: next_run_at replaced');
      assert.equal(await s.schedules.get({ name: uniq('none') }), null);
    });

    it('sync adds, changes and removes code-declared schedules by name; operator-made ones stay', async () => {
      const s = db.storage;
      const [keep, drop, change, cli] = [uniq('keep'), uniq('drop'), uniq('change'), uniq('cli')];
      await s.schedules.upsert({ items: [scheduleOf(cli, { source: 'cli' })] });
      await s.schedules.sync({ items: [scheduleOf(keep), scheduleOf(drop), scheduleOf(change, { everyMs: 2000 })] });
      const added = uniq('added');
      const r = await s.schedules.sync({ items: [scheduleOf(keep), scheduleOf(change, { everyMs: 5000, nextRunAt: new Date(T0 + 5000) }), scheduleOf(added)] });
      assert.ok(r.removed.includes(drop));
      assert.ok(!r.removed.includes(cli) && !r.removed.includes(keep));
      assert.equal(await s.schedules.get({ name: drop }), null);
      assert.equal((await s.schedules.get({ name: cli }))?.source, 'cli');
      assert.equal((await s.schedules.get({ name: change }))?.everyMs, 5000);
      assert.equal((await s.schedules.get({ name: change }))?.nextRunAt?.getTime(), T0 + 5000);
      assert.equal((await s.schedules.get({ name: added }))?.source, 'code');
      const names = (await s.schedules.list()).map((x) => x.name);
      assert.deepEqual(names, [...names].sort(), 'listed by name');
      assert.equal(await s.schedules.remove({ name: cli }), true);
      assert.equal(await s.schedules.remove({ name: cli }), false);
    });

    it('schedules.fire: CAS on next_run_at; a stale expected value writes nothing; jobs carry schedule and slot', async () => {
      const s = db.storage;
      const name = uniq('cas');
      await s.schedules.upsert({ items: [scheduleOf(name)] });
      const r1 = await s.schedules.fire(fire(name, T0, [T0], T0 + 1000));
      assert.equal(r1.applied, true);
      assert.equal(r1.jobIds.length, 1);
      const job = await s.jobs.get({ id: r1.jobIds[0]! });
      assert.equal(job?.scheduleName, name);
      assert.equal(job?.slotAt?.getTime(), T0);
      assert.equal(job?.status, 'queued');
      assert.deepEqual(job?.payload, JOB.payload);
      const stale = await s.schedules.fire(fire(name, T0, [T0 + 1000], T0 + 2000));
      assert.deepEqual(stale, { applied: false, jobIds: [], duplicates: 0 });
      const row = await s.schedules.get({ name });
      assert.equal(row?.nextRunAt?.getTime(), T0 + 1000);
      assert.equal(row?.lastSlotAt?.getTime(), T0);
      assert.ok(row?.lastRunAt);
      // an empty slot list (skip policy) still advances
      assert.equal((await s.schedules.fire(fire(name, T0 + 1000, [], T0 + 5000))).applied, true);
      assert.equal((await s.schedules.get({ name }))?.nextRunAt?.getTime(), T0 + 5000);
      // a slot already enqueued is a duplicate, not a second job
      const dup = await s.schedules.fire(fire(name, T0 + 5000, [T0, T0 + 5000], T0 + 6000));
      assert.equal(dup.applied, true);
      assert.equal(dup.duplicates, 1);
      assert.equal(dup.jobIds.length, 1);
      // disabled schedules do not fire and are not due
      await s.schedules.setEnabled({ name, enabled: false });
      assert.equal((await s.schedules.fire(fire(name, T0 + 6000, [T0 + 6000], T0 + 7000))).applied, false);
      assert.ok(!(await s.schedules.due({ limit: 1000 })).some((x) => x.name === name));
      const en = await s.schedules.setEnabled({ name, enabled: true, nextRunAt: new Date(T0 + 9000) });
      assert.equal(en?.enabled, true);
      assert.equal(en?.nextRunAt?.getTime(), T0 + 9000);
      assert.ok(!(await s.schedules.due({ limit: 1000 })).some((x) => x.name === name), 'next_run_at in 2030: not due yet');
    });

    it('schedules.due: enabled and next_run_at <= now, oldest first', async () => {
      const s = db.storage;
      const now = (await s.now()).getTime();
      const [past, older, future] = [uniq('due'), uniq('due'), uniq('due')];
      await s.schedules.upsert({ items: [
        scheduleOf(past, { nextRunAt: new Date(now - 1000) }),
        scheduleOf(older, { nextRunAt: new Date(now - 5000) }),
        scheduleOf(future, { nextRunAt: new Date(now + 3_600_000) }),
      ] });
      const due = (await s.schedules.due({ limit: 1000 })).map((x) => x.name).filter((n) => [past, older, future].includes(n));
      assert.deepEqual(due, [older, past]);
    });

    it('schedules.runNow: a job with slot_at = now, next_run_at untouched; null for an unknown schedule', async () => {
      const s = db.storage;
      const name = uniq('now');
      await s.schedules.upsert({ items: [scheduleOf(name)] });
      const before = (await s.now()).getTime();
      const job = await s.schedules.runNow({ name, job: JOB });
      assert.equal(job?.scheduleName, name);
      assert.ok(job?.slotAt && Math.abs(job.slotAt.getTime() - before) < 5_000);
      assert.equal((await s.schedules.get({ name }))?.nextRunAt?.getTime(), T0);
      assert.equal(await s.schedules.runNow({ name: uniq('nope'), job: JOB }), null);
    });

    it('race: 6 connections fire every slot of 30 at once: exactly one applies per slot, one job per slot', async () => {
      const name = uniq('race');
      await db.storage.schedules.upsert({ items: [scheduleOf(name)] });
      const conns = await connections(() => db.connectAnother(), 6);
      let expected = T0;
      let applied = 0;
      for (let i = 0; i < 30; i++) {
        const results = await Promise.all(conns.map((c) => c.schedules.fire(fire(name, expected, [expected], expected + 1000))));
        const wins = results.filter((r) => r.applied);
        assert.equal(wins.length, 1, `slot ${i}: exactly one scheduler applies`);
        applied += wins[0]!.jobIds.length;
        expected += 1000;
      }
      assert.equal(applied, 30);
      const jobs = await db.storage.jobs.list({ type: JOB.type, limit: 1000 });
      const slots = jobs.filter((j) => j.scheduleName === name).map((j) => j.slotAt!.getTime()).sort((a, b) => a - b);
      assert.deepEqual(slots, Array.from({ length: 30 }, (_, i) => T0 + i * 1000), 'no duplicate, no gap');
    });

    it('race: concurrent fires of overlapping slot sets never insert a slot twice', async () => {
      const name = uniq('overlap');
      await db.storage.schedules.upsert({ items: [scheduleOf(name)] });
      const conns = await connections(() => db.connectAnother(), 4);
      // every connection read the same next_run_at and fires the same three missed slots (misfire 'all')
      const results = await Promise.all(conns.map((c) => c.schedules.fire(fire(name, T0, [T0, T0 + 1000, T0 + 2000], T0 + 3000))));
      assert.equal(results.filter((r) => r.applied).length, 1);
      const jobs = (await db.storage.jobs.list({ type: JOB.type, limit: 1000 })).filter((j) => j.scheduleName === name);
      assert.equal(jobs.length, 3);
    });
  });
}
