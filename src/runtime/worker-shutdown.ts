/**
 * The pieces of a worker's shutdown (Worker#shutdown in worker.ts runs them in order): handing a
 * job back, waiting for running jobs against the deadline, aborting the handlers still running
 * at it, and waiting a bounded time for the outcomes still being written. Plain functions over
 * what they are given. An aborted handler that stops within the grace is handed back after it
 * stopped; one that does not is never handed back while it runs: its lease is left to lapse.
 */
import { AbortReason as Reason, decideFinish, DEFAULT_RETRY_POLICY } from '../core/index.js';
import type { ClaimedJob } from '../core/storage.js';
import type { Attempt } from './attempt.js';
import type { Completer } from './completer.js';
import { settlesBy } from './deadline.js';
import type { Logger } from './env.js';
import type { Wakeup } from './wakeup.js';

/** At shutdown, how long outcomes still being written and the worker's removal may take past the deadline and the abort grace. */
const OUTCOME_WRITE_ALLOWANCE_MS = 5_000;

/** Give a job back due now, the attempt not counted as a failure (written through the completer). */
export async function handBack(completer: Completer, job: ClaimedJob, random: () => number): Promise<void> {
  const d = decideFinish(job, { kind: 'shutdown' }, DEFAULT_RETRY_POLICY, random);
  await completer.finish({ id: job.id, leaseToken: job.leaseToken, ...d }).catch(() => {});
}

/** Sleep on `wake` while `busy()` holds, until `until` (Date.now() ms) at the latest. */
export async function waitWhile(wake: Wakeup, busy: () => boolean, until: number): Promise<void> {
  while (busy() && Date.now() < until) await wake.wait(until - Date.now());
}

/**
 * The deadline is reached: abort the handlers in `still` (they get the abort grace, at most
 * 1 s, to stop; each is handed back once it did) and return the grace given (0 when none ran).
 */
export function abortAtDeadline(still: readonly Attempt[], log: Logger, abortGraceMs: number | undefined): number {
  if (still.length === 0) return 0;
  log.warn(
    { event: 'worker.deadline', stillRunning: still.map((a) => ({ jobId: a.job.id, type: a.job.type, runningMs: Date.now() - a.startedAt })) },
    'shutdown deadline reached: aborting running jobs; each is handed back once its handler stopped',
  );
  const grace = Math.min(abortGraceMs ?? 5_000, 1_000);
  for (const a of still) a.abort(new Reason('SHUTDOWN', 'worker shutting down'), grace);
  return grace;
}

/**
 * Wait for the outcomes still being written: the jobs in `running` to land, then `writes()`
 * (asked for only once they have). They get a bounded allowance: a database that stopped
 * answering must not hold stop() forever. An outcome left unwritten keeps its lease until it
 * lapses (the worker stops its heartbeater next); then the sweeper runs that job again.
 * Returns when the allowance ends (Date.now() ms).
 */
export async function awaitOutcomes(wake: Wakeup, running: ReadonlyMap<string, unknown>, writes: () => Promise<unknown>, grace: number, log: Logger): Promise<number> {
  const writesUntil = Date.now() + grace + OUTCOME_WRITE_ALLOWANCE_MS;
  await waitWhile(wake, () => running.size > 0, writesUntil);
  const written = await settlesBy(writes(), writesUntil);
  if (running.size > 0 || !written) {
    log.warn(
      { event: 'worker.outcomes_unwritten', jobs: [...running.keys()], allowanceMs: OUTCOME_WRITE_ALLOWANCE_MS },
      'stopping with outcomes still unwritten: their leases will lapse and the sweeper will run those jobs again',
    );
  }
  return writesUntil;
}
