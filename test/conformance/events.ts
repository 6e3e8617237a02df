/**
 * An operator's changes in a job's history: jobs.retry / jobs.cancel with an actor write one
 * event in the change's transaction, only when it applied; jobs.events reads them back; the
 * attempt rows and the events give one order (core/job-history.ts) across a retry, when
 * attempt numbers start again; pruning takes the events with their jobs; every attempt row
 * carries its wait (started_at minus the run_at it was claimed at).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ValidationError } from '../../src/core/errors.js';
import { jobHistory } from '../../src/core/job-history.js';
import type { Storage } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { jobIn } from './admin.js';
import { assertBetween, claimOne, finish, insertAndClaim, mustGet, newJob, uniq, useDb } from './helpers.js';

const ERR = { code: 'E_X', message: 'x' };
const BY = { actor: 'dashboard:ops', source: '10.0.0.7' };

/** Fail the claimed job's attempt, due again at once. */
async function fail(s: Storage, c: { id: string; leaseToken: string }, dead = false): Promise<void> {
  if (dead) await finish(s, c, { status: 'dead', error: ERR, attempt: { outcome: 'dead', error: ERR } });
  else await finish(s, c, { status: 'failed', runAfterMs: 0, error: ERR, attempt: { outcome: 'failed', error: ERR, retryDelayMs: 0 } });
}

/** Wait (by asking the database) until its clock is past `t`, so a finish at `t` is older than a retention of 0. */
async function clockPast(s: Storage, t: Date): Promise<void> {
  while ((await s.now()).getTime() <= t.getTime()) await new Promise((r) => setImmediate(r));
}

export function eventTests(h: ConformanceHarness): void {
  describe('job events', () => {
    const db = useDb(h);

    it('a retry with an actor writes one retried event: at now, who, from where, the status and attempts before, the last attempt', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s);
      await fail(s, c, true);
      const [attempt] = await s.attempts.list({ jobId: c.id });
      const t0 = (await s.now()).getTime();
      assert.equal((await s.jobs.retry({ id: c.id, ...BY })).applied, true);
      const t1 = (await s.now()).getTime();
      const events = await s.jobs.events({ jobId: c.id });
      assert.equal(events.length, 1);
      const [e] = events;
      assert.match(e!.id, /^\d+$/);
      assertBetween(e!.at.getTime(), t0, t1, 'at');
      assert.deepEqual({ ...e!, id: 'x', at: 'x' }, {
        id: 'x', at: 'x', jobId: c.id, kind: 'retried', actor: BY.actor, source: BY.source,
        detail: { status: 'dead', attempts: 1, lastAttemptId: attempt!.id },
      });
    });

    it('a cancel with an actor: a queued job names no attempt; a running one names the attempt the cancel closed; no source is null', async () => {
      const s = db.storage;
      const q = await jobIn(s, 'queued');
      assert.equal((await s.jobs.cancel({ id: q.id, actor: 'api' })).applied, true);
      const [eq] = await s.jobs.events({ jobId: q.id });
      assert.deepEqual([eq!.kind, eq!.actor, eq!.source, eq!.detail], ['cancelled', 'api', null, { status: 'queued', attempts: 0, lastAttemptId: null }]);

      const r = await insertAndClaim(s);
      assert.equal((await s.jobs.cancel({ id: r.id, ...BY })).applied, true);
      const [closed, ...more] = await s.attempts.list({ jobId: r.id });
      assert.deepEqual(more, []);
      assert.equal(closed!.outcome, 'cancelled');
      const [er] = await s.jobs.events({ jobId: r.id });
      assert.deepEqual(er!.detail, { status: 'running', attempts: 1, lastAttemptId: closed!.id });
    });

    it('nothing is recorded when the change did not apply, or no actor was given', async () => {
      const s = db.storage;
      const running = await insertAndClaim(s);
      assert.equal((await s.jobs.retry({ id: running.id, ...BY })).applied, false);
      const done = await jobIn(s, 'succeeded');
      assert.equal((await s.jobs.cancel({ id: done.id, ...BY })).applied, false);
      assert.equal((await s.jobs.retry({ id: done.id, ...BY })).applied, false);
      const dead = await jobIn(s, 'dead');
      assert.equal((await s.jobs.retry({ id: dead.id })).applied, true);
      assert.equal((await s.jobs.cancel({ id: dead.id })).applied, true);
      for (const id of [running.id, done.id, dead.id]) assert.deepEqual(await s.jobs.events({ jobId: id }), [], `job ${id}`);
      assert.deepEqual(await s.jobs.retry({ id: '987654321', ...BY }), { job: null, applied: false });
      assert.deepEqual(await s.jobs.events({ jobId: '987654321' }), []);
    });

    it('a bad actor or source is a ValidationError and changes nothing', async () => {
      const s = db.storage;
      const j = await jobIn(s, 'dead');
      const before = await mustGet(s, j.id);
      for (const bad of [{ actor: '' }, { actor: 'x'.repeat(201) }, { actor: 'a\u001b[2Jb' }, { actor: 'ok', source: 'a\nb' }, { source: 'alone' }, { actor: 7 as unknown as string }]) {
        await assert.rejects(s.jobs.retry({ id: j.id, ...bad }), ValidationError, JSON.stringify(bad));
        await assert.rejects(s.jobs.cancel({ id: j.id, ...bad }), ValidationError, JSON.stringify(bad));
      }
      assert.deepEqual(await mustGet(s, j.id), before);
      assert.deepEqual(await s.jobs.events({ jobId: j.id }), []);
    });

    it('attempt numbers start again after a retry, and the retried event marks where: attempts in the order they ran, the event between the runs', async () => {
      const s = db.storage;
      const c1 = await insertAndClaim(s);
      await fail(s, c1);
      const c2 = await claimOne(s, c1.type);
      await fail(s, c2, true);
      await s.jobs.retry({ id: c1.id, ...BY });
      const c3 = await claimOne(s, c1.type);
      await fail(s, c3);
      const c4 = await claimOne(s, c1.type);
      const attempts = await s.attempts.list({ jobId: c1.id });
      assert.deepEqual(attempts.map((a) => [a.attempt, a.leaseToken]), [[1, c1.leaseToken], [2, c2.leaseToken], [1, c3.leaseToken], [2, c4.leaseToken]]);
      const events = await s.jobs.events({ jobId: c1.id });
      assert.deepEqual(events.map((e) => e.detail), [{ status: 'dead', attempts: 2, lastAttemptId: attempts[1]!.id }]);
      const history = jobHistory(attempts, events).map((x) => (x.kind === 'attempt' ? `${x.run}:${x.attempt.attempt}` : `${x.run}:${x.event.kind}`));
      assert.deepEqual(history, ['1:1', '1:2', '2:retried', '2:1', '2:2']);
    });

    it('events list oldest first, at most limit', async () => {
      const s = db.storage;
      const j = await jobIn(s, 'queued');
      await s.jobs.cancel({ id: j.id, actor: 'one' });
      await s.jobs.retry({ id: j.id, actor: 'two' });
      await s.jobs.cancel({ id: j.id, actor: 'three' });
      assert.deepEqual((await s.jobs.events({ jobId: j.id })).map((e) => [e.kind, e.actor]), [['cancelled', 'one'], ['retried', 'two'], ['cancelled', 'three']]);
      assert.deepEqual((await s.jobs.events({ jobId: j.id, limit: 2 })).map((e) => e.actor), ['one', 'two']);
    });

  });

  describe('job events: pruning', () => {
    const db = useDb(h);

    it('jobs.prune deletes a job\'s events with it; another job\'s stay', async () => {
      const s = db.storage;
      const type = uniq('prune-ev');
      const [a, b] = await s.jobs.insert({ jobs: [newJob(type), newJob(type)] });
      for (const r of [a!, b!]) await s.jobs.cancel({ id: r.job.id, ...BY });
      await s.jobs.retry({ id: b!.job.id, ...BY });
      await clockPast(s, (await mustGet(s, a!.job.id)).finishedAt!);
      assert.equal(await s.jobs.prune({ statuses: ['cancelled'], olderThanMs: 0, limit: 100 }), 1);
      assert.equal(await s.jobs.get({ id: a!.job.id }), null);
      assert.deepEqual(await s.jobs.events({ jobId: a!.job.id }), []);
      assert.deepEqual((await s.jobs.events({ jobId: b!.job.id })).map((e) => e.kind), ['cancelled', 'retried']);
    });
  });

  describe('attempt wait', () => {
    const db = useDb(h);

    it('wait_ms is started_at minus the run_at the claim found, running and ended, also when the finish moves run_at', async () => {
      const s = db.storage;
      const type = uniq('wait');
      const runAt = new Date((await s.now()).getTime() - 5_000);
      await s.jobs.insert({ jobs: [newJob(type, { runAt })] });
      const c1 = await claimOne(s, type);
      const wait1 = c1.startedAt!.getTime() - runAt.getTime();
      assert.ok(wait1 >= 5_000, `waited ${wait1} ms`);
      assert.deepEqual((await s.attempts.list({ jobId: c1.id })).map((a) => a.waitMs), [wait1]);
      await finish(s, c1, { status: 'failed', runAfterMs: 0, error: ERR, attempt: { outcome: 'failed', error: ERR, retryDelayMs: 0 } });
      const c2 = await claimOne(s, type);
      const wait2 = c2.startedAt!.getTime() - c2.runAt.getTime();
      await finish(s, c2, { status: 'failed', runAfterMs: 60_000, error: ERR, attempt: { outcome: 'failed', error: ERR, retryDelayMs: 60_000 } });
      assert.deepEqual((await s.attempts.list({ jobId: c1.id })).map((a) => a.waitMs), [wait1, wait2], 'the finish wrote the wait before moving run_at');
      await s.jobs.retry({ id: c1.id });
      const c3 = await claimOne(s, type);
      await s.jobs.cancel({ id: c3.id });
      const wait3 = c3.startedAt!.getTime() - c3.runAt.getTime();
      assert.deepEqual((await s.attempts.list({ jobId: c1.id })).map((a) => a.waitMs), [wait1, wait2, wait3]);
    });
  });
}
