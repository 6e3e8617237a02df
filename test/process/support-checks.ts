/**
 * Waits and checks shared by the process-level scenarios: bounded polling, "wait until N jobs
 * succeeded" (failing early on a stall), the no-overlapping-leases check on attempt history,
 * and `verifyDrain`, the full exactly-once audit of a drained run.
 */
import assert from 'node:assert/strict';
import type { AttemptRow } from '../../src/core/index.js';
import type { Sandbox } from './support.js';

export function pause(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Poll `probe` until it returns a truthy value; fail after `timeoutMs` with `what` and the last value. */
export async function waitUntil<T>(what: string, probe: () => Promise<T> | T, timeoutMs = 15_000, everyMs = 50): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    last = await probe();
    if (last) return last as NonNullable<T>;
    if (Date.now() >= until) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what} (last: ${JSON.stringify(last)})`);
    await pause(everyMs);
  }
}

/**
 * Wait until `total` jobs have succeeded, however slowly a loaded machine drains them; fail when
 * the count stops moving for `stallMs`, with the status counts in the message. A deadline on the
 * whole drain would fail a correct run beside a busy CPU.
 */
export async function waitForSucceeded(sb: Sandbox, total: number, stallMs = 15_000): Promise<void> {
  let last = -1;
  let movedAt = Date.now();
  for (;;) {
    let counts: Awaited<ReturnType<Sandbox['statusCounts']>>;
    try {
      counts = await sb.statusCounts();
    } catch (e) {
      // the test's own connection may be killed too (the MySQL connection-kill scenario)
      if (Date.now() - movedAt > stallMs) throw e;
      await pause(100);
      continue;
    }
    const n = counts.succeeded ?? 0;
    if (n >= total) return;
    if (n !== last) {
      last = n;
      movedAt = Date.now();
    }
    if (Date.now() - movedAt > stallMs) throw new Error(`no job finished for ${stallMs} ms; stuck at ${JSON.stringify(counts)}`);
    await pause(100);
  }
}

/**
 * No job ran under two valid leases: each attempt holds its lease from startedAt until it was
 * closed (finishedAt), and no two of one job's attempts overlap. Every attempt must be closed.
 */
export function assertNoOverlap(jobId: string, attempts: AttemptRow[]): void {
  const sorted = [...attempts].sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime());
  for (const a of sorted) assert.ok(a.finishedAt, `job ${jobId}: attempt ${a.attempt} was never closed (outcome ${a.outcome})`);
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1]!;
    const cur = sorted[i]!;
    assert.ok(
      prev.finishedAt!.getTime() <= cur.startedAt.getTime(),
      `job ${jobId}: attempt ${prev.attempt} [${prev.startedAt.toISOString()}, ${prev.finishedAt!.toISOString()}] overlaps attempt ${cur.attempt} starting ${cur.startedAt.toISOString()}`,
    );
  }
}

/** Count occurrences of each value. */
export function tally<T>(items: readonly T[]): Map<T, number> {
  const m = new Map<T, number>();
  for (const i of items) m.set(i, (m.get(i) ?? 0) + 1);
  return m;
}

export interface DrainAudit {
  /** attempts beyond the first, over all jobs */
  extraAttempts: number;
  /** attempts per outcome */
  outcomes: Map<string, number>;
  /** attempts per error code and message, over the attempts that did not succeed */
  errors: Map<string, number>;
}

/**
 * The exactly-once audit of a drained run of `total` jobs, each with a distinct effect key:
 * every job succeeded with exactly one 'succeeded' attempt, one history row per counted
 * attempt, every attempt closed and none overlapping another of its job (no job under two
 * valid leases), attempts only by `workerIds`; the ledger holds `total` done effects, one per
 * job, and the outbox `total` sends, none twice.
 */
export async function verifyDrain(sb: Sandbox, total: number, workerIds: ReadonlySet<string>): Promise<DrainAudit> {
  assert.deepEqual(await sb.statusCounts(), { succeeded: total });
  const jobs = await sb.storage.jobs.list({ limit: total + 10 });
  assert.equal(jobs.length, total);
  const byJob = await sb.attemptsByJob();
  assert.equal(byJob.size, total, 'every job has attempt history');
  let extraAttempts = 0;
  const outcomes = new Map<string, number>();
  const errors = new Map<string, number>();
  for (const job of jobs) {
    assert.equal(job.status, 'succeeded');
    assert.equal(job.lockedBy, null);
    assert.equal(job.leaseToken, null);
    const attempts = byJob.get(job.id) ?? [];
    assert.equal(attempts.filter((a) => a.outcome === 'succeeded').length, 1, `job ${job.id}: ${JSON.stringify(attempts)}`);
    assert.equal(attempts.length, job.attempts, `job ${job.id}: one history row per counted attempt`);
    for (const a of attempts) {
      assert.ok(workerIds.has(a.workerId), `attempt by an unknown worker ${a.workerId}`);
      outcomes.set(a.outcome, (outcomes.get(a.outcome) ?? 0) + 1);
      if (a.outcome !== 'succeeded') {
        const why = `${a.errorCode ?? '-'}: ${(a.errorMessage ?? '').slice(0, 120)}`;
        errors.set(why, (errors.get(why) ?? 0) + 1);
      }
    }
    extraAttempts += attempts.length - 1;
    assertNoOverlap(job.id, attempts);
  }

  assert.equal(await sb.storage.effects.count(), total, 'ledger');
  const effects = await sb.storage.effects.list({ limit: total + 10 });
  assert.equal(effects.length, total);
  assert.ok(effects.every((e) => e.state === 'done'), 'every effect is done');
  assert.equal(new Set(effects.map((e) => e.jobId)).size, total, 'one effect per job');
  const sends = sb.outboxLines();
  const dupes = [...tally(sends.map((s) => s.key))].filter(([, n]) => n > 1);
  assert.deepEqual(dupes, [], 'no send happened twice');
  assert.equal(sends.length, total, 'outbox');
  return { extraAttempts, outcomes, errors };
}
