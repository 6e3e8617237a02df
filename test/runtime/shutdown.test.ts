/**
 * Shutdown is a deadline (DESIGN §2.9), in-process: worker.stop({ deadlineMs }) lets running
 * jobs finish until the deadline, then aborts them with SHUTDOWN and hands them back due now
 * with the attempt not counted; buffered-but-unstarted jobs are handed back too.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { AbortReason } from '../../src/core/index.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Harness, STORAGE_KINDS, deferred, describeEachKind, overriding, waitFor } from './support.js';

await describeEachKind('graceful stop', STORAGE_KINDS, (kind) => {
  let h: Harness;
  before(async () => {
    h = await Harness.open(kind);
  });
  after(() => h.close());

  test('a long job is handed back at the deadline (queued, attempts unchanged, attempt handed_back); buffered ones too', async () => {
    const started: string[] = [];
    let reason: AbortReason | undefined;
    const jobs = [
      defineJob({
        type: 'long',
        maxAttempts: 1,
        timeoutMs: 60_000,
        handler: async (_p, ctx) => {
          started.push(ctx.job.id);
          await new Promise((_, reject) =>
            ctx.signal.addEventListener('abort', () => reject((reason = ctx.signal.reason as AbortReason)), { once: true }),
          );
        },
      }),
    ];
    const { client, worker } = await h.serve(jobs, { concurrency: 1, bufferSize: 2 });
    const [j1, j2, j3] = await client.enqueueMany([0, 1, 2].map((i) => ({ type: 'long', payload: { i } })));
    assert.ok(j1 && j2 && j3);
    // one runs, two wait in the local buffer: all three are claimed (running) in the DB
    await waitFor(() => started.length === 1, 3_000, 'the first job to start');
    await waitFor(async () => (await h.client.listJobs({ type: 'long', status: 'running' })).length === 3, 3_000, 'all three to be claimed');
    assert.equal(worker.inFlight, 3);

    const t0 = Date.now();
    const report = await worker.stop({ deadlineMs: 400 });
    const took = Date.now() - t0;
    assert.ok(took >= 380, `stop waited for the deadline (${took} ms)`);
    assert.ok(took < 400 + 1_500, `stop resolved within the deadline + 1.5 s (${took} ms)`);
    assert.equal(reason?.code, 'SHUTDOWN');
    assert.deepEqual(report.handedBack, [started[0]]);
    assert.deepEqual([...report.unstarted].sort(), [j1.id, j2.id, j3.id].filter((id) => id !== started[0]).sort());
    assert.equal(started.length, 1, 'buffered jobs never started');

    const now = await h.storage.now();
    for (const j of [j1, j2, j3]) {
      const row = await h.job(j.id);
      assert.equal(row.status, 'queued', `job ${j.id} handed back`);
      assert.equal(row.attempts, 0, 'the attempt is not counted (maxAttempts 1, still runnable)');
      assert.equal(row.leaseToken, null);
      assert.equal(row.lockedBy, null);
      assert.ok(row.runAt.getTime() <= now.getTime(), 'due now');
      const attempts = await h.client.listAttempts(j.id);
      assert.deepEqual(attempts.map((a) => a.outcome), ['handed_back']);
    }
    const running = h.log.events('worker.deadline')[0]?.stillRunning as { jobId: string }[] | undefined;
    assert.deepEqual(running?.map((r) => r.jobId), [started[0]], 'the log names what was still running');
    assert.equal(h.log.count('job.handed_back', started[0]), 1);
    assert.equal((await h.storage.workers.list()).some((w) => w.id === worker.id), false, 'the worker deregistered');

    // handed back means runnable: a new worker picks them up and finishes them
    const release = deferred();
    const { worker: w2 } = await h.serve([defineJob({ type: 'long', maxAttempts: 1, handler: () => release.promise })], { concurrency: 3 });
    release.resolve();
    for (const j of [j1, j2, j3]) {
      const done = await h.waitStatus(j.id, 'succeeded');
      assert.equal(done.attempts, 1);
    }
    await w2.stop();
  });

  test('a job that finishes before the deadline completes normally; stop returns early', async () => {
    const release = deferred();
    const started = deferred();
    const { client, worker } = await h.serve([defineJob({ type: 'short', handler: () => (started.resolve(), release.promise) })], { concurrency: 1 });
    const job = await client.enqueue('short', {});
    // claimed is not started: a job still in the worker's buffer at stop() is handed back
    await started.promise;
    const t0 = Date.now();
    const stopping = worker.stop({ deadlineMs: 5_000 });
    setTimeout(() => release.resolve(), 100);
    const report = await stopping;
    assert.ok(Date.now() - t0 < 5_000, 'did not wait for the whole deadline');
    assert.deepEqual(report, { handedBack: [], unstarted: [] });
    const row = await h.job(job.id);
    assert.equal(row.status, 'succeeded');
    // and the stopped worker claims nothing more
    const later = await client.enqueue('short', {});
    await new Promise((r) => setTimeout(r, 150));
    assert.equal((await h.job(later.id)).status, 'queued');
  });

  test('a handler that ignores SHUTDOWN cannot hold stop() beyond the deadline + a capped grace; its job is not handed back while it runs', async () => {
    const started = deferred();
    const { client, worker } = await h.serve(
      [
        defineJob({
          type: 'stubborn',
          maxAttempts: 1,
          // it outlives any stop(): only the capped grace lets stop() return before its 30 s grace
          handler: () => (started.resolve(), new Promise((r) => setTimeout(r, 60_000).unref())),
        }),
      ],
      { concurrency: 1, abortGraceMs: 30_000 },
    );
    const job = await client.enqueue('stubborn', {});
    // started, not only claimed: a job still buffered at stop() is handed back unstarted
    await started.promise;
    const t0 = Date.now();
    const report = await worker.stop({ deadlineMs: 300 });
    const took = Date.now() - t0;
    // the deadline, the grace capped at 1 s, the 5 s allowance for writes, and 5 s of slack for a busy machine: far from the 30 s asked
    assert.ok(took < 300 + 1_000 + 5_000 + 5_000, `stop took ${took} ms`);
    // its handler still runs in this process: the lease is left to lapse, never handed back
    assert.deepEqual(report.handedBack, []);
    const row = await h.job(job.id);
    assert.equal(row.status, 'running');
    assert.equal(row.lockedBy, worker.id);
    assert.equal(row.attempts, 1);
    assert.equal(h.log.count('job.abandoned', job.id), 1);
  });
});

await describeEachKind('stop() when the database stops answering', STORAGE_KINDS, (kind) => {
  let h: Harness;
  before(async () => {
    h = await Harness.open(kind);
  });
  after(() => h.close());

  test('outcomes that cannot be written hold stop() for a bounded allowance, not forever', async () => {
    const release = deferred<void>();
    let hang = false;
    // finishes never answer once `hang` is set
    const storage = overriding(h.storage, 'leases', 'finish', (finish) => (p) => (hang ? new Promise(() => {}) : finish(p)));
    const started = deferred<void>();
    const { client, worker } = await h.serve([defineJob({ type: 'done-late', maxAttempts: 1, handler: () => (started.resolve(), release.promise) })], { storage, concurrency: 1 });
    const job = await client.enqueue('done-late', {});
    // the handler runs (not only claimed): its outcome is the one left unwritten
    await started.promise;
    hang = true;
    release.resolve();
    const t0 = Date.now();
    const stopped = await Promise.race([worker.stop({ deadlineMs: 100 }).then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 15_000).unref())]);
    const took = Date.now() - t0;
    assert.ok(stopped, 'stop() returned');
    assert.ok(took < 100 + 5_000 + 1_500, `stop took ${took} ms`);
    const warned = h.log.events('worker.outcomes_unwritten');
    assert.equal(warned.length, 1);
    assert.deepEqual(warned[0]?.jobs, [job.id]);
    // nothing was written: the job is still running under its lease, for the sweeper to rescue
    assert.equal((await h.job(job.id)).status, 'running');
  });

  test('a claim that does not answer does not hold stop(); the jobs it brings back later are handed back, never run', async () => {
    const gate = deferred<void>();
    const ran: string[] = [];
    // claims wait for the gate
    let claimsOut = 0;
    const storage = overriding(h.storage, 'leases', 'claim', (claim) => async (p) => (claimsOut++, await gate.promise, claim(p)));
    const def = defineJob({ type: 'never-run', handler: (_p, ctx) => void ran.push(ctx.job.id) });
    const job = await h.clientWith([def]).enqueue('never-run', {});
    const worker = await h.worker([def], { storage, concurrency: 1 });
    await waitFor(() => claimsOut > 0, 3_000, 'the first claim to be out');
    const t0 = Date.now();
    const stopped = await Promise.race([worker.stop({ deadlineMs: 100 }).then((r) => r), new Promise<null>((r) => setTimeout(() => r(null), 5_000).unref())]);
    assert.ok(stopped, `stop() returned (${Date.now() - t0} ms) while its claim was still out`);
    gate.resolve();
    const row = await h.waitStatus(job.id, 'queued', 5_000, (j) => j.lockedBy === null && j.attempts === 0 && j.startedAt !== null);
    assert.equal(row.leaseToken, null);
    assert.deepEqual(ran, [], 'a job claimed after stop() began never runs');
  });

  test('a scheduler tick that does not answer does not hold stop() past its deadline', async () => {
    let ticks = 0;
    // every look for due schedules hangs
    const storage = overriding(h.storage, 'schedules', 'due', () => () => (ticks++, new Promise(() => {})));
    const worker = await h.worker([defineJob({ type: 'idle', handler: () => {} })], { storage, schedulerIntervalMs: 10 });
    await waitFor(() => ticks > 0, 3_000, 'a scheduler tick to be out');
    const t0 = Date.now();
    const stopped = await Promise.race([worker.stop({ deadlineMs: 100 }).then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 5_000).unref())]);
    assert.ok(stopped, `stop() returned (${Date.now() - t0} ms) while a scheduler tick was still out`);
    assert.ok(Date.now() - t0 < 100 + 5_000, `stop took ${Date.now() - t0} ms`);
  });
});
