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

/**
 * An instrument watching a worker (the `observers` option); every method is optional and must
 * not throw. Whether it has `started` or `attempt` is read again after each claim (it may drop
 * them while it has nothing to do); one with both is told `started`, then wraps the start.
 */
export interface WorkerObserver {
  /** A claim returned `count` jobs (0 when none were due). */
  claimed?(count: number): void;
  /**
   * An attempt is about to start; return what to tell when it ends. For an observer that only
   * counts: it costs less than `attempt`, which wraps the handler's start.
   */
  started?(job: ClaimedJob): AttemptObservation | undefined;
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

/** What an attempt is to the observers: something to start once. */
export interface Startable {
  start(): void;
}

/**
 * A worker's observers as one (metrics and tracing), or undefined when there are none; every
 * call is guarded. Which of them watch attempts is read again after each claim: an observer may
 * drop its `started` or `attempt` while it has nothing to do (tracing with no provider
 * registered), and then an attempt does not go through it at all.
 */
export function combineObservers(list: readonly WorkerObserver[], onError: (e: unknown) => void): Observers | undefined {
  return list.length === 0 ? undefined : new Observers(list, onError);
}

export class Observers implements WorkerObserver {
  /** observers that count attempts (`started`) and that wrap their start (`attempt`), as of the last claim */
  #starters: readonly WorkerObserver[] = [];
  #wrappers: readonly WorkerObserver[] = [];

  constructor(
    private readonly list: readonly WorkerObserver[],
    private readonly onError: (e: unknown) => void,
  ) {
    this.#refresh();
  }

  /** Start an attempt through every observer watching attempts; what to tell (with `ended`) when it is over. */
  launch(job: ClaimedJob, attempt: Startable): AttemptObservation | undefined {
    const starters = this.#starters;
    // the common case (metrics alone): nothing is made per attempt
    if (starters.length === 1 && this.#wrappers.length === 0) {
      const seen = this.#started(starters[0] as WorkerObserver, job);
      attempt.start();
      return seen;
    }
    if (starters.length === 0 && this.#wrappers.length === 0) return void attempt.start();
    const chain = new AttemptChain(this.#wrappers, this.onError, job, attempt);
    for (const o of starters) chain.add(this.#started(o, job));
    return chain.start();
  }

  /** Tell the observers how an attempt ended (what `launch` returned). */
  ended(seen: AttemptObservation, end: AttemptEnd): void {
    try {
      seen.ended(end);
    } catch (e) {
      this.onError(e);
    }
  }

  claimed(count: number): void {
    for (const o of this.list) this.#guard(() => o.claimed?.(count));
    this.#refresh();
  }

  leaseLost(job: ClaimedJob): void {
    for (const o of this.list) this.#guard(() => o.leaseLost?.(job));
  }

  handedBack(jobs: readonly ClaimedJob[]): void {
    for (const o of this.list) this.#guard(() => o.handedBack?.(jobs));
  }

  rescued(type: string): void {
    for (const o of this.list) this.#guard(() => o.rescued?.(type));
  }

  #started(o: WorkerObserver, job: ClaimedJob): AttemptObservation | undefined {
    try {
      return o.started?.(job);
    } catch (e) {
      this.onError(e);
      return undefined;
    }
  }

  #guard(call: () => void): void {
    try {
      call();
    } catch (e) {
      this.onError(e);
    }
  }

  #refresh(): void {
    this.#starters = this.list.filter((o) => o.started);
    this.#wrappers = this.list.filter((o) => o.attempt);
  }
}

/**
 * One attempt through every observer that wraps it: each runs the next inside itself (so the
 * handler sees every observer's context), and the handler runs exactly once even when one
 * throws, forgets to run it or runs it twice. One object per attempt: the chain is the worker's
 * hot path.
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
    private readonly attempt: Startable,
  ) {}

  start(): AttemptObservation | undefined {
    this.#enter();
    return this.#first ? this : undefined;
  }

  add(seen: AttemptObservation | undefined): void {
    if (!seen) return;
    if (!this.#first) this.#first = seen;
    else (this.#rest ??= []).push(seen);
  }

  ended(end: AttemptEnd): void {
    this.#tell(this.#first as AttemptObservation, end);
    if (this.#rest) for (const seen of this.#rest) this.#tell(seen, end);
  }

  #tell(seen: AttemptObservation, end: AttemptEnd): void {
    try {
      seen.ended(end);
    } catch (e) {
      this.onError(e);
    }
  }

  #enter(): void {
    const at = this.#level;
    // past the last observer: the handler; past that, a late or second call, ignored
    if (at > this.observers.length) return;
    this.#level++;
    if (at === this.observers.length) return this.attempt.start();
    let seen: AttemptObservation | undefined;
    try {
      seen = this.observers[at]?.attempt?.(this.job, this.#next);
    } catch (e) {
      this.onError(e);
    }
    // an observer that threw or did not run the next one does not stop the job
    if (this.#level === at + 1) this.#enter();
    this.add(seen);
  }
}
