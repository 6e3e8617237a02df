/**
 * The zombie: worker A is SIGSTOPped past its lease while its job runs; worker B rescues the
 * job and completes it; A is SIGCONTed and carries on believing it still holds the job. Its
 * heartbeat, its ctx.once and its completion must all be rejected, so the ledger and the
 * outbox hold exactly one send and the job's outcome is B's.
 *
 * Two ways A can wake:
 * - frozen while its handler sleeps on a timer: A's overdue heartbeat timer and the handler's
 *   timer may both be due when it wakes, in either order; whichever learns first that the lease
 *   is gone (A's renewal, or the handler's own ctx.heartbeat) fires the handler's signal, and
 *   the handler's heartbeat and once are rejected;
 * - frozen while its handler blocks the event loop: the handler resumes first, before any timer
 *   runs, and tries once: rejected, the signal fired, and nothing of A's is completed.
 *
 * On SQLite, PostgreSQL and MySQL/MariaDB (a missing server skips its kind loudly).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { CliProcess } from './support.js';
import { Sandbox, dbTargets, freeze, killAll, waitUntil } from './support.js';

after(killAll);

const targets = await dbTargets('process zombie');

interface Takeover {
  sb: Sandbox;
  a: CliProcess;
  b: CliProcess;
  jobId: string;
  /** the job as B left it */
  finishedAt: Date | null;
}

/** A runs the job until `frozenWhen` (a log event, or 'parked'), is frozen; B rescues and completes it; A is SIGCONTed. */
async function takeover(sb: Sandbox, payload: Record<string, unknown>, frozenWhen: string): Promise<Takeover> {
  const [job] = await sb.client.enqueueMany([{ type: 'work', payload }]);
  assert.ok(job);
  const a = await sb.worker(['--concurrency', '1']);
  if (frozenWhen === 'parked') await sb.parked(job.id);
  else await a.waitFor((l) => l.event === frozenWhen && l.jobId === job.id);
  await freeze(a, sb);
  const held = await sb.storage.jobs.get({ id: job.id });
  assert.equal(held?.status, 'running', 'A was frozen while it held the job');
  assert.equal(held?.lockedBy, a.workerId);

  const b = await sb.worker();
  await b.waitFor((l) => l.event === 'job.rescued' && l.jobId === job.id && l.lockedBy === a.workerId);
  await b.waitFor((l) => l.event === 'job.succeeded' && l.jobId === job.id);
  const done = await sb.storage.jobs.get({ id: job.id });
  assert.equal(done?.status, 'succeeded');
  // B's rescue is the proof that A was frozen past its lease: a rescue lands only on an expired one
  assert.equal(a.exit, null);
  assert.equal(a.events((l) => l.event === 'job.lease_lost').length, 0, 'A has noticed nothing yet');

  a.signal('SIGCONT');
  return { sb, a, b, jobId: job.id, finishedAt: done?.finishedAt ?? null };
}

/** Nothing A did landed: B's attempt is the outcome, one send in the ledger and the outbox. */
async function assertOnlyB({ sb, a, b, jobId, finishedAt }: Takeover): Promise<void> {
  a.signal('SIGTERM');
  assert.equal((await a.waitExit()).code, 0, a.tail());
  const stopped = await a.waitFor('worker.stopped');
  assert.deepEqual(stopped.handedBack, [], 'the zombie attempt had wound up; nothing was handed back');
  assert.equal(a.events((l) => l.event === 'job.succeeded').length, 0, 'A never logged a success');

  const final = await sb.storage.jobs.get({ id: jobId });
  assert.equal(final?.status, 'succeeded');
  assert.equal(final?.attempts, 2);
  assert.equal(final?.lockedBy, null);
  assert.equal(final?.leaseToken, null);
  assert.deepEqual(final?.finishedAt, finishedAt, 'the finish is B’s, not overwritten');

  const attempts = await sb.storage.attempts.list({ jobId });
  assert.deepEqual(
    attempts.map((x) => [x.attempt, x.workerId, x.outcome, x.errorCode]),
    [
      [1, a.workerId, 'lease_expired', 'LEASE_EXPIRED'],
      [2, b.workerId, 'succeeded', null],
    ],
  );

  const effects = await sb.storage.effects.list({ limit: 100 });
  assert.deepEqual(effects.map((e) => [e.key, e.jobId, e.state]), [['zombie-send', jobId, 'done']]);
  const sends = sb.outboxLines();
  assert.equal(sends.length, 1, `outbox: ${JSON.stringify(sends)}`);
  assert.equal(sends[0]?.pid, b.pid, 'the one send is B’s');

  b.signal('SIGTERM');
  assert.equal((await b.waitExit()).code, 0);
}

function wokeReport(sb: Sandbox, a: CliProcess) {
  return waitUntil('the zombie handler reported what it saw', () => sb.reportLines().find((r) => r.phase === 'woke' && r.pid === a.pid && r.attempt === 1));
}

for (const { kind, server, skip } of targets) {
  describe(`process: a SIGSTOPped zombie worker (${kind})`, { skip }, () => {
    it('woken on a timer: a renewal fires the signal; heartbeat and ctx.once are rejected; nothing is completed', { timeout: 60_000 }, async () => {
      const sb = await Sandbox.create(kind, server);
      try {
        // Attempt 1 sleeps 2.5 s ignoring its signal, then calls heartbeat and once and returns
        // normally; attempt 2 does not sleep.
        const t = await takeover(sb, { effectKey: 'zombie-send', sleepMs: 2_500, sleepAttempts: 1, ignoreSignal: true, probe: ['heartbeat', 'once'] }, 'fixture.sleeping');
        // a renewal (A's own, or the handler's ctx.heartbeat) learns the job is B's, or, if the
        // database answers no renewal within a beat, the lease is given up as lapsed
        const lost = await t.a.waitFor((l) => l.event === 'job.lease_lost' && l.jobId === t.jobId);
        assert.match(String(lost.msg), /lease no longer held \(job is succeeded\)|lease lapsed/);
        const woke = await wokeReport(sb, t.a);
        assert.equal(woke.heartbeat, 'LEASE_LOST', `heartbeat after waking: ${JSON.stringify(woke)}`);
        assert.equal(woke.once, 'LEASE_LOST', `ctx.once after waking: ${JSON.stringify(woke)}`);
        assert.equal(woke.abortedAfter, true, `the signal fired: ${JSON.stringify(woke)}`);
        assert.equal(woke.reasonAfter, 'LEASE_LOST');
        await assertOnlyB(t);
      } finally {
        await killAll();
        await sb.close();
      }
    });

    it('woken mid-handler: ctx.once is rejected, the signal fires, and nothing of A’s is completed', { timeout: 60_000 }, async () => {
      const sb = await Sandbox.create(kind, server);
      try {
        // Attempt 1 blocks its event loop for 2.5 s (frozen meanwhile), then calls once and
        // returns success before A's heartbeat timer gets a turn.
        const t = await takeover(sb, { effectKey: 'zombie-send', parkMs: 2_500, probe: ['once'] }, 'parked');
        const woke = await wokeReport(sb, t.a);
        assert.equal(woke.aborted, false, `no heartbeat ran before the handler resumed: ${JSON.stringify(woke)}`);
        // ctx.once's reserve, or A's overdue renewal (its timer gets a turn while the reserve
        // awaits the database), finds the lease gone: either way the signal fires and the
        // attempt ends as lost, its result never written (assertOnlyB)
        assert.equal(woke.once, 'LEASE_LOST', `ctx.once after waking: ${JSON.stringify(woke)}`);
        assert.equal(woke.abortedAfter, true, `the signal fired: ${JSON.stringify(woke)}`);
        const lost = await t.a.waitFor((l) => l.event === 'job.lease_lost' && l.jobId === t.jobId);
        assert.match(String(lost.msg), /lease no longer held|lease lapsed/, JSON.stringify(lost));
        await assertOnlyB(t);
      } finally {
        await killAll();
        await sb.close();
      }
    });
  });
}
