/**
 * Shutdown is a deadline (DESIGN §2.9): on SIGTERM the worker stops claiming, waits for running
 * jobs until --shutdown-deadline, then aborts them and hands their leases back once their
 * handlers stopped — due now, the attempt not counted — logs what was still running, and exits.
 * A handler that ignores its signal is never handed back: its lease lapses. A second signal
 * exits at once.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { CliProcess } from './support.js';
import { Sandbox, killAll } from './support.js';

after(killAll);

const DEADLINE_MS = 1_000;
const MARGIN_MS = 3_000;

async function startLongJob(sb: Sandbox, payload: Record<string, unknown>, deadline: string): Promise<{ w: CliProcess; jobId: string }> {
  const [job] = await sb.client.enqueueMany([{ type: 'work', payload }]);
  assert.ok(job);
  const w = await sb.worker(['--shutdown-deadline', deadline]);
  await w.waitFor((l) => l.event === 'fixture.sleeping' && l.jobId === job.id);
  const running = await sb.storage.jobs.get({ id: job.id });
  assert.equal(running?.status, 'running');
  assert.equal(running?.attempts, 1);
  return { w, jobId: job.id };
}

/** The job is back to due now, its failure count as before, the attempt recorded as handed back. */
async function assertHandedBack(sb: Sandbox, w: CliProcess, jobId: string): Promise<void> {
  const job = await sb.storage.jobs.get({ id: jobId });
  assert.equal(job?.status, 'queued');
  assert.ok(job!.runAt.getTime() <= Date.now(), `due now (run_at ${job!.runAt.toISOString()})`);
  assert.equal(job?.attempts, 0, 'the handed-back attempt is not counted');
  assert.equal(job?.lastErrorCode, null, 'not recorded as a failure');
  assert.equal(job?.lockedBy, null);
  assert.equal(job?.leaseToken, null);
  const attempts = await sb.storage.attempts.list({ jobId });
  assert.deepEqual(attempts.map((a) => [a.attempt, a.workerId, a.outcome]), [[1, w.workerId, 'handed_back']]);
  assert.ok(attempts[0]?.finishedAt);

  const deadline = await w.waitFor('worker.deadline');
  const still = deadline.stillRunning as { jobId: string; type: string }[];
  assert.deepEqual(still.map((s) => s.jobId), [jobId], 'the deadline line lists the running job');
  await w.waitFor((l) => l.event === 'job.handed_back' && l.jobId === jobId);
  const stopped = await w.waitFor('worker.stopped');
  assert.deepEqual(stopped.handedBack, [jobId]);
}

describe('process: SIGTERM with a job longer than the shutdown deadline', () => {
  it('hands the job back due now, uncounted, and exits within the deadline plus a margin', { timeout: 60_000 }, async () => {
    const sb = await Sandbox.create();
    try {
      const { w, jobId } = await startLongJob(sb, { sleepMs: 10_000 }, '1s');
      const sentAt = Date.now();
      w.signal('SIGTERM');
      const exit = await w.waitExit(DEADLINE_MS + MARGIN_MS + 5_000);
      const tookMs = exit.at - sentAt;
      assert.equal(exit.code, 0, w.tail());
      assert.ok(tookMs >= DEADLINE_MS - 50, `waited for the deadline before aborting (${tookMs} ms)`);
      assert.ok(tookMs <= DEADLINE_MS + MARGIN_MS, `exited ${tookMs} ms after SIGTERM; deadline ${DEADLINE_MS} ms + margin ${MARGIN_MS} ms`);
      await assertHandedBack(sb, w, jobId);
      assert.equal(sb.outboxLines().length, 0, 'the aborted job sent nothing');
      assert.equal(await sb.storage.effects.count(), 0);
    } finally {
      await killAll();
      await sb.close();
    }
  });

  it('also exits in time when the handler ignores its abort signal; that job is not handed back but left to lapse, and runs again after its lease', { timeout: 60_000 }, async () => {
    const sb = await Sandbox.create();
    try {
      const { w, jobId } = await startLongJob(sb, { sleepMs: 10_000, sleepAttempts: 1, ignoreSignal: true }, '1s');
      const sentAt = Date.now();
      w.signal('SIGTERM');
      const exit = await w.waitExit(15_000);
      const tookMs = exit.at - sentAt;
      assert.equal(exit.code, 0, w.tail());
      assert.ok(tookMs <= DEADLINE_MS + MARGIN_MS, `exited ${tookMs} ms after SIGTERM; deadline ${DEADLINE_MS} ms + margin ${MARGIN_MS} ms`);
      await w.waitFor((l) => l.event === 'job.abandoned' && l.jobId === jobId);
      const stopped = await w.waitFor('worker.stopped');
      assert.deepEqual(stopped.handedBack, [], 'its handler was still running: not handed back');
      assert.deepEqual(stopped.abandoned, [jobId]);
      // the lease was left to lapse: the job is still held by the exited worker
      const held = await sb.storage.jobs.get({ id: jobId });
      assert.equal(held?.status, 'running');
      assert.equal(held?.lockedBy, w.workerId);
      assert.equal(sb.outboxLines().length, 0, 'the late handler never got to send');
      // another worker's sweeper rescues it after the lease, and runs it
      const b = await sb.worker();
      await b.waitFor((l) => l.event === 'job.succeeded' && l.jobId === jobId);
      const attempts = await sb.storage.attempts.list({ jobId });
      assert.deepEqual(attempts.map((a) => [a.attempt, a.workerId, a.outcome]), [
        [1, w.workerId, 'lease_expired'],
        [2, b.workerId, 'succeeded'],
      ]);
      assert.equal(sb.outboxLines().length, 1);
      b.signal('SIGTERM');
      assert.equal((await b.waitExit()).code, 0);
    } finally {
      await killAll();
      await sb.close();
    }
  });

  for (const second of ['SIGTERM', 'SIGINT'] as const) {
    it(`a second signal (${second}) exits at once with code 130`, { timeout: 60_000 }, async () => {
      const sb = await Sandbox.create();
      try {
        const { w, jobId } = await startLongJob(sb, { sleepMs: 30_000 }, '30s');
        w.signal('SIGTERM');
        await w.waitFor('worker.draining');
        const sentAt = Date.now();
        w.signal(second);
        const exit = await w.waitExit(5_000);
        assert.equal(exit.code, 130, w.tail());
        assert.ok(exit.at - sentAt < 1_500, `exited ${exit.at - sentAt} ms after the second signal`);
        assert.match(w.stderr, new RegExp(`second ${second}`));
        assert.equal(w.events('worker.stopped').length, 0, 'it did not wait for the drain');
        // The lease was not handed back: it lapses and the sweeper brings the job back.
        const job = await sb.storage.jobs.get({ id: jobId });
        assert.equal(job?.status, 'running');
        assert.equal(job?.lockedBy, w.workerId);
      } finally {
        await killAll();
        await sb.close();
      }
    });
  }
});
