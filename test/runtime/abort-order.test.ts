/**
 * An aborted attempt keeps its lease until its handler has stopped: on a timeout, or at the
 * shutdown deadline, the handler is aborted and given its grace while the lease is still held
 * (and renewed); only then is the outcome written. A handler that does not stop within the
 * grace keeps the lease (its outcome is written when it settles), and at shutdown its job is
 * not handed back, nor waited for past the deadline: its lease is left to lapse. So the next attempt never starts, and never
 * takes over an effect's reservation, while this one's handler still runs.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Harness, deferred, waitFor } from './support.js';

for (const kind of ['memory', 'sqlite'] as const) {
  describe(`an aborted attempt keeps its lease until its handler stopped (${kind})`, () => {
    let h: Harness;
    before(async () => {
      h = await Harness.open(kind);
    });
    after(() => h.close());

    test('timeout: an effect that ignores the signal runs once; the next attempt starts after the handler settled', async () => {
      const release = deferred();
      let calls = 0;
      let running = 0;
      let overlapped = false;
      const def = defineJob({
        type: 'slow-effect',
        timeoutMs: 100,
        maxAttempts: 3,
        retry: { kind: 'fixed', delayMs: 0 },
        handler: async (_p, ctx) => {
          await ctx.once('send', async () => {
            calls++;
            overlapped ||= running > 0;
            running++;
            // ignores its signal: the effect takes as long as the test says
            await release.promise;
            running--;
          });
        },
      });
      const { client } = await h.serve([def], { concurrency: 2, abortGraceMs: 150 });
      const job = await client.enqueue('slow-effect', {});
      await h.waitEvent('job.abandoned', job.id);
      // past the timeout and the grace: the next attempt has started and run the effect, or the
      // first still holds the job (running, attempt 1) while its effect runs
      await waitFor(async () => calls > 1 || ((await h.job(job.id)).status === 'running' && (await h.job(job.id)).attempts === 1), 5_000, 'a second run of the effect, or the first attempt still holding the job');
      release.resolve();
      const done = await h.waitStatus(job.id, 'succeeded');
      assert.equal(calls, 1, 'the effect ran once');
      assert.equal(overlapped, false);
      assert.equal(done.attempts, 2);
      assert.deepEqual((await h.client.listAttempts(job.id)).map((a) => a.outcome), ['timed_out', 'succeeded']);
    });

    test('shutdown: a handler that ignores its signal past the grace is not handed back; its lease is left to lapse', async () => {
      const release = deferred();
      const started = deferred();
      const def = defineJob({
        type: 'deaf-at-stop',
        timeoutMs: 600_000,
        handler: async () => {
          started.resolve();
          await release.promise;
        },
      });
      const { client, worker } = await h.serve([def], { concurrency: 1, abortGraceMs: 100 });
      const job = await client.enqueue(def.type, {});
      await started.promise;
      const report = await worker.stop({ deadlineMs: 50 });
      assert.deepEqual(report.handedBack, [], 'not handed back while its handler still runs');
      const row = await h.job(job.id);
      assert.equal(row.status, 'running', 'the lease is kept, to lapse');
      assert.equal(row.lockedBy, worker.id);
      assert.equal(h.log.count('job.abandoned', job.id), 1);
      release.resolve();
    });

    test('shutdown: a timed-out handler still running (its slot freed, its lease kept) is not waited for past the deadline; its lease is left to lapse', async () => {
      const release = deferred();
      const def = defineJob({ type: 'deaf-timeout-at-stop', timeoutMs: 100, handler: () => release.promise });
      const { client, worker } = await h.serve([def], { concurrency: 1, abortGraceMs: 100 });
      const job = await client.enqueue(def.type, {});
      await h.waitEvent('job.abandoned', job.id);
      const report = await worker.stop({ deadlineMs: 50 });
      const unwritten = h.log.events('worker.outcomes_unwritten').filter((e) => (e.jobs as string[]).includes(job.id));
      assert.deepEqual(unwritten, [], 'not reported as an outcome the database did not take');
      assert.deepEqual(report.handedBack, []);
      const stopped = h.log.events('worker.stopped').at(-1);
      assert.deepEqual(stopped?.abandoned, [job.id]);
      const row = await h.job(job.id);
      assert.equal(row.status, 'running', 'the lease is left to lapse');
      assert.equal(row.lockedBy, worker.id);
      release.resolve();
    });

    test('shutdown: a handler that stops within the grace is handed back after it stopped', async () => {
      const stopped = deferred();
      let settledAt = 0;
      const def = defineJob({
        type: 'stops-at-stop',
        timeoutMs: 600_000,
        handler: async (_p, ctx) => {
          await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
          // it winds up after its signal: the job must still be held meanwhile
          await stopped.promise;
          settledAt = Date.now();
        },
      });
      const { client, worker } = await h.serve([def], { concurrency: 1, abortGraceMs: 5_000 });
      const job = await client.enqueue(def.type, {});
      await h.waitStatus(job.id, 'running');
      const stopping = worker.stop({ deadlineMs: 50 });
      await h.waitEvent('worker.deadline');
      const held = await h.job(job.id);
      assert.equal(held.status, 'running', 'still held while the handler winds up');
      stopped.resolve();
      const report = await stopping;
      assert.deepEqual(report.handedBack, [job.id]);
      const row = await h.job(job.id);
      assert.equal(row.status, 'queued');
      assert.ok(settledAt > 0);
      assert.deepEqual((await h.client.listAttempts(job.id)).map((a) => a.outcome), ['handed_back']);
    });
  });
}
