/**
 * What operators observe: a job's trace context carried from insert to claim, attempt outcomes
 * counted over a window of the database's clock, each queue's health, and alert states moved
 * by compare-and-set (one winner among connections racing from the same episode).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AttemptOutcomeCount, JobRow, NewJob, Storage } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { assertBetween, claimOne, finish, newJob, sleep, uniq, useDb } from './helpers.js';

const ERR = { code: 'E_X', message: 'x' };
const traceparent = (n: number): string => `00-${n.toString(16).padStart(32, '0')}-${n.toString(16).padStart(16, '0')}-01`;

/** The trace context a row carries; `absent` when the property is not there at all. */
const traceOf = (j: JobRow): string => ('traceContext' in j ? String(j.traceContext) : 'absent');

/** Wait (on the storage's own clock) until it reads later than `ms`. */
async function untilDbTimePasses(s: Storage, ms: number): Promise<void> {
  while ((await s.now()).getTime() <= ms) await sleep(10);
}

/** Claim the one due job of `type` in `queue`. */
async function claimIn(s: Storage, type: string, queue: string) {
  const [c, extra] = await s.leases.claim({ workerId: 'w', types: [type], queues: [queue], limit: 2, leaseMs: 30_000 });
  assert.ok(c && !extra, `one due ${type} job in ${queue}`);
  return c;
}

async function finishedAt(s: Storage, jobId: string): Promise<number> {
  const ended = (await s.attempts.list({ jobId })).filter((a) => a.finishedAt !== null);
  return ended.at(-1)!.finishedAt!.getTime();
}

/** The outcome counts of these types, in a stable order. */
async function outcomesOf(s: Storage, sinceMs: number, types: readonly string[]): Promise<AttemptOutcomeCount[]> {
  const key = (c: AttemptOutcomeCount) => `${c.type}\0${c.queue}\0${c.outcome}`;
  return (await s.attempts.outcomes({ sinceMs })).filter((c) => types.includes(c.type)).sort((a, b) => (key(a) < key(b) ? -1 : 1));
}

export function observeTests(h: ConformanceHarness): void {
  describe('a job\'s trace context', () => {
    const db = useDb(h);

    it('insert → get, list, claim carry it; a job without one never shows the property', async () => {
      const s = db.storage;
      const type = uniq('trace');
      // alone, a run of alike jobs, a mixed batch and a keyed batch: every insert form of the adapters
      const batches: Partial<NewJob>[][] = [
        [{ traceContext: traceparent(1) }],
        [{}],
        [{ traceContext: traceparent(2) }, { traceContext: traceparent(2) }, { traceContext: traceparent(2) }],
        [{}, {}],
        [{ traceContext: traceparent(3) }, {}, { traceContext: traceparent(4), priority: 1 }],
        [{ traceContext: traceparent(5), idempotencyKey: uniq('k') }, { idempotencyKey: uniq('k') }],
      ];
      const want = new Map<string, string>();
      for (const batch of batches) {
        const res = await s.jobs.insert({ jobs: batch.map((over, i) => newJob(type, { payload: { i }, ...over })) });
        res.forEach((r, i) => {
          const expected = batch[i]!.traceContext ?? 'absent';
          assert.equal(traceOf(r.job), expected, 'the inserted row');
          want.set(r.job.id, expected);
        });
      }
      for (const [id, expected] of want) assert.equal(traceOf((await s.jobs.get({ id }))!), expected, `get ${id}`);
      const listed = await s.jobs.list({ type, limit: 100 });
      assert.equal(listed.length, want.size);
      for (const j of listed) assert.equal(traceOf(j), want.get(j.id), `list ${j.id}`);
      const claimed = await s.leases.claim({ workerId: 'w', types: [type], queues: null, limit: 100, leaseMs: 30_000 });
      assert.equal(claimed.length, want.size);
      for (const j of claimed) assert.equal(traceOf(j), want.get(j.id), `claim ${j.id}`);
      // a finish that makes it due again keeps it for the next claim
      const traced = claimed.find((j) => j.traceContext === traceparent(1))!;
      await finish(s, traced, { status: 'failed', runAfterMs: 0, error: ERR, attempt: { outcome: 'failed', error: ERR } });
      const [again] = await s.leases.claim({ workerId: 'w', types: [type], queues: null, limit: 1, leaseMs: 30_000 });
      assert.equal(again?.traceContext, traceparent(1));
    });
  });

  describe('attempts.outcomes', () => {
    const db = useDb(h);

    it('ended attempts by type, queue and outcome; running ones and pruned jobs are not counted', async () => {
      const s = db.storage;
      const [a, b] = [uniq('out-a'), uniq('out-b')];
      const [q1, q2] = [uniq('q'), uniq('q')];
      await s.jobs.insert({ jobs: [newJob(a, { queue: q1 }), newJob(a, { queue: q1 }), newJob(a, { queue: q2 }), newJob(b, { queue: q1 })] });
      await s.jobs.insert({ jobs: [newJob(b, { queue: q2, maxAttempts: 1 })] });
      // a in q1: one fails and then succeeds, the other succeeds
      const [first, second] = await s.leases.claim({ workerId: 'w', types: [a], queues: [q1], limit: 2, leaseMs: 30_000 });
      await finish(s, first!, { status: 'failed', runAfterMs: 0, error: ERR, attempt: { outcome: 'failed', error: ERR, retryDelayMs: 0 } });
      await finish(s, second!);
      await finish(s, await claimIn(s, a, q1));
      // a in q2 dies; b in q1 is cancelled by an operator while it runs; b in q2 stays running
      await finish(s, await claimIn(s, a, q2), { status: 'dead', error: ERR, attempt: { outcome: 'dead', error: ERR } });
      await s.jobs.cancel({ id: (await claimIn(s, b, q1)).id });
      await claimIn(s, b, q2);
      const expected: AttemptOutcomeCount[] = [
        { type: a, queue: q1, outcome: 'failed', count: 1 },
        { type: a, queue: q1, outcome: 'succeeded', count: 2 },
        { type: a, queue: q2, outcome: 'dead', count: 1 },
        { type: b, queue: q1, outcome: 'cancelled', count: 1 },
      ];
      assert.deepEqual(await outcomesOf(s, 3_600_000, [a, b]), expected);

      // the dead job pruned: its attempt goes with it
      const dead = (await s.jobs.list({ type: a, status: 'dead', limit: 1 }))[0]!;
      await untilDbTimePasses(s, dead.finishedAt!.getTime());
      assert.equal(await s.jobs.prune({ olderThanMs: 0, statuses: ['dead'], limit: 100 }), 1);
      assert.deepEqual(await outcomesOf(s, 3_600_000, [a, b]), expected.filter((c) => c.outcome !== 'dead'));
    });

    it('an attempt that ended before the window (on the database clock) is not counted', async () => {
      const s = db.storage;
      const type = uniq('window');
      const [early, late] = await s.jobs.insert({ jobs: [newJob(type), newJob(type)] });
      await finish(s, await claimOne(s, type), { status: 'dead', error: ERR, attempt: { outcome: 'dead', error: ERR } });
      const earlyEnd = await finishedAt(s, early!.job.id);
      await untilDbTimePasses(s, earlyEnd + 400);
      await finish(s, await claimOne(s, type));
      const lateEnd = await finishedAt(s, late!.job.id);
      // a window starting between the two ends: the query's now lies in [t0, t1], so its start
      // lies after earlyEnd, and before lateEnd when the call took less than half the gap
      for (let tries = 0; ; tries++) {
        const t0 = (await s.now()).getTime();
        const sinceMs = t0 - Math.floor((earlyEnd + lateEnd) / 2);
        const got = await outcomesOf(s, sinceMs, [type]);
        const t1 = (await s.now()).getTime();
        if (t1 - sinceMs > lateEnd - 1) {
          assert.ok(tries < 5, 'the window query kept taking longer than half the gap between the two attempts');
          continue;
        }
        assert.deepEqual(got, [{ type, queue: 'default', outcome: 'succeeded', count: 1 }]);
        break;
      }
      assert.deepEqual((await outcomesOf(s, 3_600_000, [type])).map((c) => c.outcome), ['dead', 'succeeded']);
    });
  });

  describe('queues.health', () => {
    const db = useDb(h);

    it('due, running and the age of the oldest due job per queue; future and finished jobs do not count', async () => {
      const s = db.storage;
      const [queue, idle, busy] = [uniq('hq'), uniq('hq'), uniq('hq')];
      const [due, later, run, done] = [uniq('h-due'), uniq('h-later'), uniq('h-run'), uniq('h-done')];
      const dbNow = (await s.now()).getTime();
      const [oldest] = await s.jobs.insert({
        jobs: [
          newJob(due, { queue, runAt: new Date(dbNow - 5_000) }), newJob(due, { queue, runAt: new Date(dbNow - 2_000) }), newJob(due, { queue }),
          newJob(later, { queue, runAfterMs: 60_000 }), newJob(run, { queue }), newJob(run, { queue }),
          newJob(done, { queue }), newJob(done, { queue }), newJob(done, { queue }), newJob(done, { queue }),
          newJob(done, { queue: idle }), newJob(later, { queue: idle, runAfterMs: 60_000 }), newJob(run, { queue: busy }),
        ],
      });
      await s.leases.claim({ workerId: 'w', types: [run], queues: null, limit: 3, leaseMs: 30_000 });
      // of `done` in `queue`: succeeded, dead, failed due again (due), failed later (not due)
      const [ok, gone, retry, wait] = await s.leases.claim({ workerId: 'w', types: [done], queues: [queue], limit: 4, leaseMs: 30_000 });
      await finish(s, ok!);
      await finish(s, gone!, { status: 'dead', error: ERR, attempt: { outcome: 'dead', error: ERR } });
      await finish(s, retry!, { status: 'failed', runAfterMs: 0, error: ERR, attempt: { outcome: 'failed', error: ERR } });
      await finish(s, wait!, { status: 'failed', runAfterMs: 60_000, error: ERR, attempt: { outcome: 'failed', error: ERR } });
      await finish(s, await claimIn(s, done, idle));

      const t0 = (await s.now()).getTime();
      const health = (await s.queues.health()).filter((q) => [queue, idle, busy].includes(q.queue));
      const t1 = (await s.now()).getTime();
      const runAt = oldest!.job.runAt.getTime();
      const mine = health.find((q) => q.queue === queue);
      assert.ok(mine, JSON.stringify(health));
      assert.deepEqual({ due: mine.due, running: mine.running }, { due: 4, running: 2 });
      assertBetween(runAt + mine.oldestDueAgeMs!, t0, t1, 'run_at of the oldest due job + its age');
      assert.deepEqual(health.find((q) => q.queue === busy), { queue: busy, due: 0, running: 1, oldestDueAgeMs: null });
      assert.equal(health.find((q) => q.queue === idle), undefined, 'a queue with only finished and future jobs is not listed');
    });
  });

  describe('alerts', () => {
    const db = useDb(h);

    it('transition moves a rule only from the episode it is at (0: no row yet), since = now; list is by rule', async () => {
      const s = db.storage;
      const rule = uniq('b-rule');
      assert.equal(await s.alerts.transition({ rule, episode: 1, state: 'firing', value: 1 }), null, 'no row: only episode 0 applies');
      const t0 = (await s.now()).getTime();
      const fired = await s.alerts.transition({ rule, episode: 0, state: 'firing', value: 12.5 });
      const t1 = (await s.now()).getTime();
      assert.ok(fired);
      assert.deepEqual({ ...fired, since: 0, updatedAt: 0 }, { rule, state: 'firing', episode: 1, since: 0, value: 12.5, updatedAt: 0 });
      assertBetween(fired.since.getTime(), t0, t1, 'since');
      assertBetween(fired.updatedAt.getTime(), t0, t1, 'updatedAt');
      assert.equal(await s.alerts.transition({ rule, episode: 0, state: 'ok', value: null }), null, 'a row exists: episode 0 no longer applies');
      await untilDbTimePasses(s, fired.since.getTime());
      const cleared = await s.alerts.transition({ rule, episode: 1, state: 'ok', value: null });
      assert.ok(cleared);
      assert.deepEqual([cleared.state, cleared.episode, cleared.value], ['ok', 2, null]);
      assert.ok(cleared.since.getTime() > fired.since.getTime(), 'since moves with the transition');
      assert.equal(await s.alerts.transition({ rule, episode: 1, state: 'firing', value: 3 }), null, 'a stale episode');
      const other = uniq('a-rule');
      await s.alerts.transition({ rule: other, episode: 0, state: 'ok', value: -0.25 });
      const listed = (await s.alerts.list()).filter((r) => r.rule === rule || r.rule === other);
      assert.deepEqual(listed.map((r) => [r.rule, r.state, r.episode, r.value]), [[other, 'ok', 1, -0.25], [rule, 'ok', 2, null]]);
      assert.deepEqual(listed[1], cleared, 'list shows the row as the transition returned it');
    });

    it('8 connections moving one rule from the same episode at once: exactly one wins, and the row is its', async () => {
      const others: Storage[] = [];
      for (let i = 0; i < 8; i++) others.push(await db.connectAnother());
      const rule = uniq('race-rule');
      for (const episode of [0, 1]) {
        const got = await Promise.all(others.map((o, i) => o.alerts.transition({ rule, episode, state: i % 2 ? 'ok' : 'firing', value: i })));
        const won = got.filter((r) => r !== null);
        assert.equal(won.length, 1, `from episode ${episode}: ${JSON.stringify(got)}`);
        assert.equal(won[0]!.episode, episode + 1);
        const [row] = (await db.storage.alerts.list()).filter((r) => r.rule === rule);
        assert.deepEqual(row, won[0]);
      }
    });
  });
}
