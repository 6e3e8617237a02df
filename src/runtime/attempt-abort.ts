/**
 * The abort path of an attempt (a timeout, the max runtime, a lost lease, a cancel, the
 * shutdown deadline): rare, so a plain async function over what the attempt lends it.
 *
 * The handler gets the grace period to notice its signal while the lease is still held (and
 * renewed); once it stopped, why it was aborted is recorded (a lost lease or a cancel is not ours
 * to record). So the next attempt never starts, nor takes over an effect's reservation, while
 * this handler still runs in this process. Past the grace its slot is taken back and:
 * - at shutdown (and for a lost lease) nothing is written: the job is not handed back while its
 *   handler runs; its lease is left to lapse and the sweeper runs the job again;
 * - on a timeout or the max runtime the lease is kept (renewed until the max runtime plus the
 *   grace) and the outcome written when the handler stops, its late result discarded; if the
 *   worker stops first, the lease is left to lapse as at shutdown.
 */
import type { AbortReason, AttemptResult } from '../core/index.js';
import type { ClaimedJob } from '../core/storage.js';
import { abortResult } from './attempt-report.js';
import type { Logger } from './env.js';

/** What the abort path uses of its attempt. */
export interface Aborted {
  readonly job: ClaimedJob;
  readonly log: Logger;
  /** how long the handler gets to stop */
  readonly graceMs: number;
  /** whether the handler has settled within `ms` (Infinity: whenever it does, unless the worker stops waiting) */
  handlerStops(ms: number): Promise<boolean>;
  freeSlot(): void;
  /** write this result as the attempt's finish; resolves to its outcome */
  record(result: AttemptResult): Promise<string>;
  /** the attempt is over with this outcome */
  end(outcome: string): void;
}

export async function afterAbort(a: Aborted, reason: AbortReason): Promise<void> {
  const result = abortResult(reason, a.job);
  if (!result) a.log.warn({ event: reason.code === 'CANCELLED' ? 'job.cancelled' : 'job.lease_lost' }, reason.message);
  const stopped = await a.handlerStops(a.graceMs);
  a.freeSlot();
  if (!stopped) {
    const lapse = result === null || result.kind === 'shutdown';
    a.log.warn(
      { event: 'job.abandoned', graceMs: a.graceMs, leaseKept: !lapse },
      lapse ? 'handler ignored its abort signal; slot freed, its lease is left to lapse' : 'handler ignored its abort signal; slot freed, the lease is kept until it stops',
    );
    if (lapse) return a.end(result ? 'abandoned' : 'lost');
    // no longer waited for once the worker stops: then its lease is left to lapse
    if (!(await a.handlerStops(Infinity))) return a.end('abandoned');
  }
  a.end(result ? await a.record(result) : 'lost');
}
