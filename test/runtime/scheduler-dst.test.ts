/**
 * Nightly cron schedules driven through the real Scheduler across the 2026 DST transitions of New
 * York, Warsaw and Lord Howe, on every storage: each slot the independent oracle
 * (src/runtime/zone-oracle.test-util.ts) names is enqueued exactly once, and nothing else is.
 *
 * The scheduler reads time from the database. Memory and SQLite take an injected clock; a server's
 * clock cannot be moved, so on PostgreSQL and MariaDB the storage's now() answers the simulated
 * time and dueSchedules() keeps the server's answer (next_run_at <= its now, which is after every
 * simulated instant here) at or before the simulated time. The CAS on next_run_at, the one job
 * per (schedule, slot) and the timestamps' round trip are the server's own.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import type { MisfirePolicy, ScheduleInput } from '../../src/core/index.js';
import type { Storage } from '../../src/core/storage.js';
import { Scheduler } from '../../src/runtime/scheduler.js';
import { oracleSlots, transitions } from '../../src/runtime/zone-oracle.test-util.js';
import { memoryStorage } from '../../src/storage/memory/index.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import type { StorageKind } from './support.js';
import { LogCapture, STORAGE_KINDS, describeEachKind, openTestStorage, overriding } from './support.js';

const HOUR = 3_600_000;
const GRACE = 60_000;
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** A storage of `kind` whose "database clock" is `clock`, as far as the scheduler can tell. */
async function clockedStorage(kind: StorageKind, clock: () => number): Promise<Storage> {
  if (kind === 'memory' || kind === 'sqlite') {
    const dir = kind === 'sqlite' ? mkdtempSync(path.join(tmpdir(), 'leasehold-dst-')) : null;
    const storage = dir ? sqliteStorage({ path: path.join(dir, 'jobs.db'), clock }) : memoryStorage({ clock });
    await storage.migrate();
    cleanups.push(() => storage.close().finally(() => dir && rmSync(dir, { recursive: true, force: true })));
    return storage;
  }
  const { storage, cleanup } = await openTestStorage(kind);
  cleanups.push(cleanup);
  const due = overriding(storage, 'schedules', 'due', (due) => async (p) => (await due({ limit: 1_000 })).filter((r) => r.nextRunAt!.getTime() <= clock()).slice(0, p.limit));
  return new Proxy(due, {
    get(target, prop) {
      if (prop === 'now') return async () => new Date(clock());
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

const NIGHTLY: Record<string, string[]> = {
  'America/New_York': ['30 2 * * *', '30 1 * * *', '0 * * * *'],
  'Europe/Warsaw': ['0 2 * * *', '30 2 * * *', '*/15 1-3 * * *'],
  'Australia/Lord_Howe': ['45 2 * * *', '30 1 * * *', '0 2 * * *'],
};
const YEAR_2026 = [Date.UTC(2026, 0, 1), Date.UTC(2027, 0, 1)] as const;
const WINDOWS = Object.keys(NIGHTLY).flatMap((zone) => transitions(zone, ...YEAR_2026).map((x) => ({ zone, at: x.at })));

/** Deterministic tick steps between `min` and `max` ms. */
function steps(seed: number, min: number, max: number): () => number {
  let s = seed;
  return () => min + ((s = (s * 48_271) % 2_147_483_647) % (max - min));
}

interface Run {
  fired: Map<string, number[]>;
  lastTick: number;
  enqueued: number;
  attempted: number;
}

/**
 * Declare `crons` in `zone` (as code schedules, misfire `misfire`) at `from`, then tick the
 * scheduler with the simulated clock from `from` to `to`, `step()` ms apart.
 */
async function drive(kind: StorageKind, zone: string, crons: string[], misfire: MisfirePolicy, from: number, to: number, step: () => number): Promise<Run> {
  let now = from;
  const storage = await clockedStorage(kind, () => now);
  assert.ok(to < Date.now(), 'every simulated instant is in the servers’ past, so their own due filter passes it');
  const tag = `${zone.split('/')[1]}-${new Date(from).toISOString().slice(0, 10)}-${misfire}`;
  const schedules: ScheduleInput[] = crons.map((cron, i) => ({ name: `${tag}-${i}`, type: `${tag}-${i}`, cron, timezone: zone, misfire, misfireMax: 1_000 }));
  const log = new LogCapture();
  const scheduler = new Scheduler({ storage, schedules, logger: log.logger, graceMs: GRACE });
  await scheduler.sync();
  let enqueued = 0;
  let lastTick = now;
  for (; now <= to; now += step()) {
    enqueued += await scheduler.tick();
    lastTick = now;
  }
  const fired = new Map<string, number[]>();
  for (const s of schedules) {
    const jobs = await storage.jobs.list({ type: s.type, limit: 1_000 });
    fired.set(s.cron!, jobs.map((j) => j.slotAt!.getTime()).sort((a, b) => a - b));
  }
  const attempted = log.events('schedule.fired').reduce((n, e) => n + (e.slots as string[]).length, 0);
  return { fired, lastTick, enqueued, attempted };
}

const iso = (list: number[]) => list.map((t) => new Date(t).toISOString());

await describeEachKind('cron schedules across the 2026 DST transitions, through the Scheduler', STORAGE_KINDS, (kind) => {
  test('ticking every 30–55 s from 4 hours before each transition to 4 hours after: each slot enqueued once, none skipped, none extra', { timeout: 300_000 }, async () => {
    for (const [i, { zone, at }] of WINDOWS.entries()) {
      const [from, to] = [at - 4 * HOUR + 20 * 60_000, at + 4 * HOUR];
      const run = await drive(kind, zone, NIGHTLY[zone]!, 'skip', from, to, steps(i + 1, 30_000, GRACE - 5_000));
      let expected = 0;
      for (const cron of NIGHTLY[zone]!) {
        const want = oracleSlots(cron, zone, from, run.lastTick + 1);
        assert.ok(want.length > 0, `${cron} has a slot on the transition day`);
        expected += want.length;
        assert.deepEqual(iso(run.fired.get(cron)!), iso(want), `${cron} in ${zone} around ${new Date(at).toISOString()}`);
      }
      assert.equal(run.enqueued, expected, 'the scheduler reports one job per slot');
      assert.equal(run.attempted, expected, 'no slot was offered twice');
    }
  });

  test("misfire 'all' with a tick every ~5 hours: the look-back from any instant finds every slot once", { timeout: 300_000 }, async () => {
    for (const [i, { zone, at }] of WINDOWS.entries()) {
      // starting 20 min off the hour: no slot of these schedules is due at the start
      const [from, to] = [at - 26 * HOUR + 20 * 60_000, at + 26 * HOUR];
      const run = await drive(kind, zone, NIGHTLY[zone]!, 'all', from, to, steps(i + 7, 4 * HOUR, 6 * HOUR));
      for (const cron of NIGHTLY[zone]!) {
        const want = oracleSlots(cron, zone, from, run.lastTick + 1);
        assert.deepEqual(iso(run.fired.get(cron)!), iso(want), `${cron} in ${zone} around ${new Date(at).toISOString()}`);
      }
      assert.equal(run.attempted, run.enqueued, 'no slot was offered twice');
      assert.ok(run.enqueued > 0);
    }
  });
});
