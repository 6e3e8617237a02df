/**
 * What a worker tells the instruments watching it (metrics, tracing: src/observe). Every
 * method is optional and none is called when no observer is given, so an unobserved worker
 * pays nothing. Observers must not throw: a throwing observer is logged and ignored.
 */
import type { ClaimedJob } from '../core/storage.js';

/** How an attempt ended, as the worker counts it: a job status it wrote, or 'lost', 'handed_back', 'abandoned'. */
export interface AttemptEnd {
  /** e.g. `succeeded`, `failed`, `dead`, `lost` */
  outcome: string;
  /** wall-clock run time of the attempt */
  durationMs: number;
  /** the handler's error, for failed, dead and cancelled outcomes */
  error?: {
    /** the error's `code` (a LeaseholdError code, or e.g. `HANDLER_ERROR`) */
    code: string;
    /** the error's message */
    message: string;
  } | null | undefined;
}

/** What an observer returns when an attempt starts, told how it ended. */
export interface AttemptObservation {
  /** Called once, when the attempt is over. */
  ended(end: AttemptEnd): void;
}

/** An instrument watching a worker (the `observers` option); every method is optional and must not throw. */
export interface WorkerObserver {
  /** A claim returned `count` jobs (0 when none were due). */
  claimed?(count: number): void;
  /**
   * An attempt starts: call `run` (it starts the handler) inside whatever context the handler
   * should see (a tracing span); return what to tell when it ends.
   */
  attempt?(job: ClaimedJob, run: () => void): AttemptObservation | undefined;
  /** A lease was lost before its job started. */
  leaseLost?(job: ClaimedJob): void;
  /** Claimed jobs given back unstarted at shutdown. */
  handedBack?(jobs: readonly ClaimedJob[]): void;
  /** This worker's sweeper rescued an expired lease of a job of this type. */
  rescued?(type: string): void;
}

/** One observer for several (metrics and tracing), or undefined when there are none. */
export function combineObservers(list: readonly WorkerObserver[], onError: (e: unknown) => void): WorkerObserver | undefined {
  if (list.length === 0) return undefined;
  if (list.length === 1 && list[0]) return guarded(list[0], onError);
  const all = list.map((o) => guarded(o, onError));
  return {
    claimed: (n) => all.forEach((o) => o.claimed?.(n)),
    attempt: (job, run) => {
      const ends: AttemptObservation[] = [];
      // each observer wraps the next one's run, so the handler sees every observer's context
      const start = all.reduceRight<() => void>((inner, o) => () => {
        const seen = o.attempt ? o.attempt(job, inner) : (inner(), undefined);
        if (seen) ends.push(seen);
      }, run);
      start();
      return { ended: (end) => ends.forEach((e) => e.ended(end)) };
    },
    leaseLost: (job) => all.forEach((o) => o.leaseLost?.(job)),
    handedBack: (jobs) => all.forEach((o) => o.handedBack?.(jobs)),
    rescued: (type) => all.forEach((o) => o.rescued?.(type)),
  };
}

/** The same observer with every call caught: instruments never break a job. */
function guarded(o: WorkerObserver, onError: (e: unknown) => void): WorkerObserver {
  const safe = <A extends unknown[]>(f: ((...a: A) => void) | undefined) =>
    f &&
    ((...a: A) => {
      try {
        f.apply(o, a);
      } catch (e) {
        onError(e);
      }
    });
  return {
    ...(o.claimed ? { claimed: safe(o.claimed) } : {}),
    ...(o.leaseLost ? { leaseLost: safe(o.leaseLost) } : {}),
    ...(o.handedBack ? { handedBack: safe(o.handedBack) } : {}),
    ...(o.rescued ? { rescued: safe(o.rescued) } : {}),
    ...(o.attempt
      ? {
          attempt: (job: ClaimedJob, run: () => void) => {
            let ran = false;
            let seen: AttemptObservation | undefined;
            try {
              seen = o.attempt?.call(o, job, () => ((ran = true), run()));
            } catch (e) {
              onError(e);
            }
            // an observer that threw or forgot to run it does not stop the job
            if (!ran) run();
            return seen && { ended: safe((end: AttemptEnd) => seen?.ended(end)) as (end: AttemptEnd) => void };
          },
        }
      : {}),
  };
}
