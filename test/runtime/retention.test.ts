/**
 * Retention (src/runtime/retention.ts): what the policy prunes and keeps, its bounded batches
 * and their budget, and that a worker's sweeper still prunes with it. On memory and SQLite,
 * whose "database clock" can be moved: jobs finish "now", then the clock moves days ahead.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, it } from 'node:test';
import pino from 'pino';
import { ValidationError } from '../../src/core/errors.js';
import type { FinishParams, Storage } from '../../src/core/storage.js';
import { JobRegistry, defineJob } from '../../src/runtime/job-definition.js';
import { Retention, retentionRules } from '../../src/runtime/retention.js';
import { Sweeper } from '../../src/runtime/sweeper.js';
import { Worker } from '../../src/runtime/worker.js';
import { memoryStorage } from '../../src/storage/memory/index.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import { LogCapture, overriding, waitFor } from './support.js';

const DAY = 86_400_000;

interface Clocked {
  storage: Storage;
  /** move the database clock this far ahead */
  advance(ms: number): void;
  close(): Promise<void>;
}

function open(kind: 'memory' | 'sqlite'): Clocked {
  let offset = 0;
  const clock = () => Date.now() + offset;
  if (kind === 'memory') {
    const storage = memoryStorage({ clock });
    return { storage, advance: (ms) => (offset += ms), close: () => storage.close() };
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-retention-'));
  const storage = sqliteStorage({ path: path.join(dir, 'jobs.db'), clock });
  return { storage, advance: (ms) => (offset += ms), close: async () => (await storage.close(), rmSync(dir, { recursive: true, force: true })) };
}

/** One job of `type` claimed and finished as `status` (or left running / failed). */
async function jobIn(s: Storage, type: string, status: FinishParams['status'] | 'running'): Promise<string> {
  await s.jobs.insert({ jobs: [{ queue: 'default', type, payload: {}, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000 }] });
  const [c] = await s.leases.claim({ workerId: 'w', types: [type], queues: null, limit: 1, leaseMs: 365 * DAY });
  assert.ok(c);
  if (status !== 'running') {
    const outcome = status === 'queued' ? 'snoozed' : status;
    await s.leases.finish({ items: [{ id: c.id, leaseToken: c.leaseToken, status, ...(status === 'failed' ? { runAfterMs: 60 * DAY } : {}), attempt: { outcome } as FinishParams['attempt'] }] });
  }
  return c.id;
}

const exists = async (s: Storage, id: string) => (await s.jobs.get({ id })) !== null;

for (const kind of ['memory', 'sqlite'] as const) {
  describe(`retention (${kind})`, () => {
    let db: Clocked;
    afterEach(() => db.close());

    it('prunes succeeded after 7 days and dead/cancelled after 30 by default; keeps the rest and the effect ledger', async () => {
      db = open(kind);
      const s = db.storage;
      await s.migrate();
      const [oldOk, oldDead, oldCancelled, midDead] = [await jobIn(s, 'a', 'succeeded'), await jobIn(s, 'b', 'dead'), await jobIn(s, 'c', 'cancelled'), await jobIn(s, 'd', 'dead')];
      const [failed, running] = [await jobIn(s, 'e', 'failed'), await jobIn(s, 'f', 'running')];
      const effects = await s.effects.count();
      db.advance(20 * DAY);
      const [recentOk, freshDead] = [await jobIn(s, 'g', 'succeeded'), await jobIn(s, 'h', 'dead')];
      // oldDead and oldCancelled finished 31 days ago, midDead too: all three past 30 days
      db.advance(11 * DAY);

      const r = new Retention(s, {});
      assert.deepEqual(await r.prunable(), { succeeded: 2, dead: 2, cancelled: 1 }, 'recentOk finished 11 days ago: past 7 too');
      const report = await r.prune();
      assert.deepEqual(report, { pruned: { succeeded: 2, dead: 2, cancelled: 1 }, total: 5, complete: true });
      for (const id of [oldOk, oldDead, oldCancelled, midDead, recentOk]) assert.equal(await exists(s, id), false, `job ${id} pruned`);
      for (const id of [failed, running, freshDead]) assert.equal(await exists(s, id), true, `job ${id} kept`);
      assert.equal(await s.effects.count(), effects);
      assert.deepEqual(await r.prunable(), { succeeded: 0, dead: 0, cancelled: 0 });
    });

    it('a status set to false, or retention false, keeps those jobs', async () => {
      db = open(kind);
      const s = db.storage;
      await s.migrate();
      const ok = await jobIn(s, 'a', 'succeeded');
      const dead = await jobIn(s, 'b', 'dead');
      db.advance(400 * DAY);
      assert.equal((await new Retention(s, false).prune()).total, 0);
      assert.equal((await new Retention(s, { succeededMs: false }).prune()).total, 1);
      assert.equal(await exists(s, ok), true);
      assert.equal(await exists(s, dead), false);
    });

    it('deletes in batches of batchSize, each after the last one\'s cursor, at most maxBatches per status per run, with a turn of the event loop between batches; a run starts from the oldest', async () => {
      db = open(kind);
      await db.storage.migrate();
      for (let i = 0; i < 5; i++) await jobIn(db.storage, `t${i}`, 'succeeded');
      db.advance(8 * DAY);
      const limits: number[] = [];
      const afters: (string | null)[] = [];
      const cursors: (string | null)[] = [];
      let turned = true;
      const s = overriding(db.storage, 'jobs', 'pruneBatch', (prune) => async (p) => {
        assert.ok(turned, 'a timer set during the previous batch ran before this one');
        turned = false;
        setTimeout(() => (turned = true), 0);
        limits.push(p.limit);
        afters.push(p.after?.id ?? null);
        const out = await prune(p);
        cursors.push(out.cursor?.id ?? null);
        return out;
      });
      const r = new Retention(s, { batchSize: 2, maxBatches: 2, deadMs: false });
      assert.deepEqual(await r.prune(), { pruned: { succeeded: 4, dead: 0, cancelled: 0 }, total: 4, complete: false });
      assert.deepEqual(limits, [2, 2]);
      assert.deepEqual(afters, [null, cursors[0]], 'the second batch starts where the first stopped');
      assert.ok(cursors[0] !== null);
      await waitFor(() => turned, 1_000, 'the last batch\'s timer');
      assert.deepEqual(await r.prune(), { pruned: { succeeded: 1, dead: 0, cancelled: 0 }, total: 1, complete: true });
      assert.equal(afters[2], null, 'another run starts from the oldest');
    });

    it('pauseRatio (default 3): after each full batch it waits that many times as long as the batch took; none after the last', async () => {
      db = open(kind);
      await db.storage.migrate();
      for (let i = 0; i < 5; i++) await jobIn(db.storage, `t${i}`, 'succeeded');
      db.advance(8 * DAY);
      let now = 0;
      const pauses: number[] = [];
      // each batch takes 10 ms on this clock
      const s = overriding(db.storage, 'jobs', 'pruneBatch', (prune) => async (p) => ((now += 10), prune(p)));
      const pace = { now: () => now, sleep: async (ms: number) => void pauses.push(ms) };
      const budget = new Retention(s, { batchSize: 2, deadMs: false, maxBatches: 2 }, undefined, pace);
      assert.equal((await budget.prune()).total, 4);
      assert.deepEqual(pauses.splice(0), [30], 'two batches, the budget: no pause after the second');
      const r = new Retention(s, { batchSize: 2, deadMs: false }, undefined, pace);
      assert.equal((await r.prune()).total, 1);
      assert.deepEqual(pauses.splice(0), [], 'one short batch: the last');
      for (let i = 0; i < 5; i++) await jobIn(db.storage, `v${i}`, 'succeeded');
      db.advance(8 * DAY);
      assert.equal((await r.prune()).total, 5);
      assert.deepEqual(pauses, [30, 30], 'three batches: 2, 2, then 1 (short: the last)');
      pauses.length = 0;
      for (let i = 0; i < 3; i++) await jobIn(db.storage, `u${i}`, 'succeeded');
      db.advance(8 * DAY);
      assert.equal((await new Retention(s, { batchSize: 2, deadMs: false, pauseRatio: 0 }, undefined, pace).prune()).total, 3);
      assert.deepEqual(pauses, [0], 'pauseRatio 0: only a turn of the event loop');
    });

    it('stops between batches once keepGoing says no (a worker stopping), the rest left for the next run', async () => {
      db = open(kind);
      await db.storage.migrate();
      for (let i = 0; i < 5; i++) await jobIn(db.storage, `t${i}`, 'succeeded');
      db.advance(8 * DAY);
      let batches = 0;
      const s = overriding(db.storage, 'jobs', 'pruneBatch', (prune) => async (p) => (batches++, prune(p)));
      const r = new Retention(s, { batchSize: 2, deadMs: false, pauseRatio: 0 });
      assert.deepEqual(await r.prune({ keepGoing: () => batches < 1 }), { pruned: { succeeded: 2, dead: 0, cancelled: 0 }, total: 2, complete: false });
      assert.deepEqual(await r.prune({ keepGoing: () => false }), { pruned: { succeeded: 2, dead: 0, cancelled: 0 }, total: 2, complete: false }, 'a first batch whatever keepGoing says');
      assert.deepEqual(await r.prune(), { pruned: { succeeded: 1, dead: 0, cancelled: 0 }, total: 1, complete: true });
    });

    it('an abort ends the run in its pause, and no later batch or status runs; a stopped sweeper prunes nothing', async () => {
      db = open(kind);
      await db.storage.migrate();
      for (let i = 0; i < 5; i++) await jobIn(db.storage, `t${i}`, 'succeeded');
      for (let i = 0; i < 3; i++) await jobIn(db.storage, `d${i}`, 'dead');
      db.advance(40 * DAY);
      const statuses: string[] = [];
      const s = overriding(db.storage, 'jobs', 'pruneBatch', (prune) => async (p) => (statuses.push(p.statuses.join()), prune(p)));
      const stopping = new AbortController();
      // the pause is where the abort lands: it never resolves unless aborted
      const pace = { now: () => 0, sleep: (_ms: number, signal?: AbortSignal) => new Promise((_, reject) => (stopping.abort(), signal?.aborted ? reject(new Error('aborted')) : undefined)) };
      const r = new Retention(s, { batchSize: 2 }, undefined, pace);
      assert.deepEqual(await r.prune({ signal: stopping.signal }), { pruned: { succeeded: 2, dead: 0, cancelled: 0 }, total: 2, complete: false });
      assert.deepEqual(statuses, ['succeeded']);
      // after an aborted prune the rest of the maintenance is skipped too: it is the next tick's
      const later: string[] = [];
      const counted = overriding(overriding(s, 'workers', 'prune', (prune) => async (p) => (later.push('workers.prune'), prune(p))), 'attempts', 'rollUp', (rollUp) => async (p) => (later.push('attempts.rollUp'), rollUp(p)));
      const sweeper = new Sweeper(counted, new JobRegistry([]), pino({ level: 'silent' }), Math.random, { intervalMs: 1_000_000, retention: {}, workerSilenceMs: 60_000 });
      await sweeper.stop();
      await sweeper.maintain();
      assert.deepEqual(statuses, ['succeeded'], 'nothing pruned once stopped');
      assert.deepEqual(later, [], 'no worker prune or rollup once stopped');
      const running = new Sweeper(counted, new JobRegistry([]), pino({ level: 'silent' }), Math.random, { intervalMs: 1_000_000, retention: {}, workerSilenceMs: 60_000 });
      await running.maintain();
      assert.deepEqual(later, ['workers.prune', 'attempts.rollUp'], 'a sweeper not stopped does both');
    });

    it('a worker\'s sweeper prunes with the worker\'s retention option', async () => {
      db = open(kind);
      const s = db.storage;
      await s.migrate();
      const old = await jobIn(s, 'a', 'succeeded');
      db.advance(2 * DAY);
      const recent = await jobIn(s, 'b', 'succeeded');
      const log = new LogCapture();
      const worker = new Worker({ storage: s, jobs: [defineJob({ type: 'noop', handler: () => {} })], retention: { succeededMs: DAY }, sweepIntervalMs: 20, logger: log.logger, scheduler: false });
      await worker.start();
      try {
        await waitFor(async () => !(await exists(s, old)), 10_000, 'the sweeper to prune the old job');
        assert.equal(await exists(s, recent), true);
        // logged once the prune's run ended, which can be a moment after its delete shows
        const pruned = await waitFor(() => log.events('jobs.pruned')[0], 10_000, 'the prune logged');
        assert.equal(pruned.count, 1);
      } finally {
        await worker.stop({ deadlineMs: 1_000 });
      }
    });
  });
}

describe('retention options', () => {
  it('bad values are a ValidationError when the worker is made', () => {
    const jobs = [defineJob({ type: 'noop', handler: () => {} })];
    for (const bad of [{ succeededMs: -1 }, { deadMs: Number.NaN }, { batchSize: 0 }, { maxBatches: 1.5 }, { pauseRatio: -1 }, { pauseRatio: 101 }, { pauseRatio: Number.NaN }]) {
      const [name] = Object.keys(bad);
      assert.throws(() => new Worker({ storage: memoryStorage(), jobs, retention: bad }), (e) => e instanceof ValidationError && e.message.startsWith(`retention.${name} must be`), JSON.stringify(bad));
    }
    assert.deepEqual(retentionRules({}), [{ status: 'succeeded', olderThanMs: 7 * DAY }, { status: 'dead', olderThanMs: 30 * DAY }, { status: 'cancelled', olderThanMs: 30 * DAY }]);
  });
});
