/**
 * A worker SIGKILLed while its job runs (after the job's send was recorded): a second worker
 * rescues the job once its lease lapses and completes it. The attempt history shows both
 * attempts and why the first ended; the send happened once. On SQLite, PostgreSQL and
 * MySQL/MariaDB (a missing server skips its kind loudly).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Sandbox, dbTargets, killAll } from './support.js';

after(killAll);

const targets = await dbTargets('process sigkill');

for (const { kind, server, skip } of targets) {
  describe(`process: worker SIGKILLed mid-job (${kind})`, { skip }, () => {
    it('the job is rescued after its lease and completes; history shows lease_expired then succeeded', { timeout: 60_000 }, async () => {
      const sb = await Sandbox.create(kind, server);
      try {
        const [job] = await sb.client.enqueueMany([{ type: 'work', payload: { effectKey: 'kill-1', effectFirst: true, sleepMs: 60_000, sleepAttempts: 1 } }]);
        assert.ok(job);

        const a = await sb.worker();
        await a.waitFor((l) => l.event === 'fixture.sleeping' && l.jobId === job.id);
        // The send was recorded before the kill.
        assert.equal(await sb.storage.effects.count(), 1);
        a.signal('SIGKILL');
        const exitA = await a.waitExit();
        assert.equal(exitA.signal, 'SIGKILL');

        const held = await sb.storage.jobs.get({ id: job.id });
        assert.equal(held?.status, 'running', 'the dead worker still holds the lease');
        assert.equal(held?.lockedBy, a.workerId);

        const b = await sb.worker();
        const rescued = await b.waitFor((l) => l.event === 'job.rescued' && l.jobId === job.id);
        assert.equal(rescued.lockedBy, a.workerId);
        assert.equal(rescued.status, 'failed', 'rescued for retry, not dead');
        await b.waitFor((l) => l.event === 'job.succeeded' && l.jobId === job.id);
        // attempt 2 found the send already recorded and skipped it
        assert.ok(b.events((l) => l.event === 'effect.skipped' && l.jobId === job.id && l.key === 'kill-1').length === 1);

        const final = await sb.storage.jobs.get({ id: job.id });
        assert.equal(final?.status, 'succeeded');
        assert.equal(final?.attempts, 2);
        assert.equal(final?.lockedBy, null);
        assert.equal(final?.leaseToken, null);

        const attempts = await sb.storage.attempts.list({ jobId: job.id });
        assert.equal(attempts.length, 2, JSON.stringify(attempts));
        const [first, second] = attempts;
        assert.equal(first?.attempt, 1);
        assert.equal(first?.workerId, a.workerId);
        assert.equal(first?.outcome, 'lease_expired');
        assert.equal(first?.errorCode, 'LEASE_EXPIRED');
        assert.ok(first?.finishedAt, 'attempt 1 is closed');
        assert.ok((first?.retryDelayMs ?? 0) > 0, 'the rescue scheduled a retry with a delay');
        assert.equal(second?.attempt, 2);
        assert.equal(second?.workerId, b.workerId);
        assert.equal(second?.outcome, 'succeeded');
        assert.ok(second!.startedAt.getTime() >= first!.finishedAt!.getTime() + first!.retryDelayMs! - 2, 'attempt 2 waited out the backoff');
        // The lease lapsed before the rescue: attempt 1 was closed no earlier than a lease after its start.
        assert.ok(first!.finishedAt!.getTime() - first!.startedAt.getTime() >= 1_000, 'rescued only after the 1 s lease');

        assert.equal(await sb.storage.effects.count(), 1);
        const sends = sb.outboxLines();
        assert.equal(sends.length, 1, JSON.stringify(sends));
        assert.equal(sends[0]?.pid, a.pid, 'the send came from the killed worker and was not repeated');

        b.signal('SIGTERM');
        assert.equal((await b.waitExit()).code, 0);
      } finally {
        await killAll();
        await sb.close();
      }
    });
  });
}
