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

/** One observer for several (metrics and tracing), or undefined when there are none; every call is guarded. */
export function combineObservers(list: readonly WorkerObserver[], onError: (e: unknown) => void): WorkerObserver | undefined {
  if (list.length === 0) return undefined;
  const each = <K extends 'claimed' | 'leaseLost' | 'handedBack' | 'rescued'>(name: K) => (arg: Parameters<NonNullable<WorkerObserver[K]>>[0]) => {
    for (const o of list) {
      try {
        (o[name] as ((a: typeof arg) => void) | undefined)?.call(o, arg);
      } catch (e) {
        onError(e);
      }
    }
  };
  const starting = list.filter((o) => o.attempt);
  return {
    claimed: each('claimed'),
    ...(starting.length > 0 ? { attempt: (job: ClaimedJob, run: () => void) => new AttemptChain(starting, onError, job, run).start() } : {}),
    leaseLost: each('leaseLost'),
    handedBack: each('handedBack'),
    rescued: each('rescued'),
  };
}

/**
 * One attempt through every observer: each runs the next inside itself (so the handler sees
 * every observer's context), and the handler runs exactly once even when one throws, forgets
 * to run it or runs it twice. One object per attempt: the chain is the worker's hot path.
 */
class AttemptChain implements AttemptObservation {
  #level = 0;
  #first: AttemptObservation | undefined;
  #rest: AttemptObservation[] | undefined;
  readonly #next = (): void => this.#enter();

  constructor(
    private readonly observers: readonly WorkerObserver[],
    private readonly onError: (e: unknown) => void,
    private readonly job: ClaimedJob,
    private readonly run: () => void,
  ) {}

  start(): AttemptObservation | undefined {
    this.#enter();
    return this.#first ? this : undefined;
  }

  ended(end: AttemptEnd): void {
    for (const seen of this.#rest ? [this.#first as AttemptObservation, ...this.#rest] : [this.#first as AttemptObservation]) {
      try {
        seen.ended(end);
      } catch (e) {
        this.onError(e);
      }
    }
  }

  #enter(): void {
    const at = this.#level;
    // past the last observer: the handler; past that, a late or second call, ignored
    if (at > this.observers.length) return;
    this.#level++;
    if (at === this.observers.length) return this.run();
    let seen: AttemptObservation | undefined;
    try {
      seen = this.observers[at]?.attempt?.(this.job, this.#next);
    } catch (e) {
      this.onError(e);
    }
    // an observer that threw or did not run the next one does not stop the job
    if (this.#level === at + 1) this.#enter();
    if (!seen) return;
    if (!this.#first) this.#first = seen;
    else (this.#rest ??= []).push(seen);
  }
}
