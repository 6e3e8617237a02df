/**
 * One attempt of one claimed job: builds the handler's context, enforces the inactivity timeout
 * and the max runtime, turns whatever happened into a decision, and writes it as one fenced finish. `slotFreed` fires as soon as the handler is done with its slot (the next job
 * may start); `ended` once the outcome is written and the lease released.
 *
 * A job that ends without an abort runs as callbacks, not as async functions racing promises:
 * the handler's result is taken with one `then`, the finish is handed to the completer with
 * the attempt itself as the one to tell (allocation per job is a measured cost here). The abort
 * path is rare and stays a plain async function (attempt-abort.ts): an aborted attempt keeps its
 * lease until its handler has stopped.
 */
import type { AttemptResult, Decision } from '../core/index.js';
import { AbortReason, DEFAULT_RETRY_POLICY, LeaseLostError, PermanentFailure, decideFinish } from '../core/index.js';
import type { ClaimedJob, FinishResult, Storage } from '../core/storage.js';
import type { Timed } from './attempt-clock.js';
import { AttemptContext, type ContextHost } from './attempt-context.js';
import { afterAbort } from './attempt-abort.js';
import { SUCCESS, classify, classifyError, reportFinish } from './attempt-report.js';
import type { FinishSink } from './completer.js';
import type { AttemptDeps } from './attempt-deps.js';
import { ProgressReporter } from './attempt-progress.js';
import type { EffectBatcher } from './effect-batcher.js';
import type { Logger } from './env.js';
import type { AttemptObservation } from './observer.js';

export type { AttemptDeps } from './attempt-deps.js';
import type { HeldLease } from './heartbeater.js';
import type { JobDefinition } from './job-definition.js';
import { validateWithSchema } from './job-definition.js';

/** handler running → settled (its result being recorded) | aborted (the abort path records) */
type Phase = 'running' | 'settled' | 'aborted';

export class Attempt implements ContextHost, Timed, FinishSink {
  readonly startedAt = Date.now();
  /** performance.now() at start, for the run time that sizes claim batches */
  readonly launchedAt = performance.now();
  /** what the worker's observers want told when it ends (metrics, tracing) */
  observed: AttemptObservation | undefined = undefined;
  /**
   * Made when the handler first reads `ctx.signal` (or on abort after that): most handlers
   * never do, and an AbortController with its listener was a tenth of the runtime's own cost
   * per job. Until then `#reason` carries the abort.
   */
  #controller: AbortController | undefined;
  #reason: AbortReason | undefined;
  #phase: Phase = 'running';
  /** the handler's promise settled (whatever the phase) */
  #handlerDone = false;
  /** the abort path waits for a late handler: told when it settles, or when it is no longer waited for */
  #onHandlerDone: (() => void) | undefined;
  #stopWaiting: (() => void) | undefined;
  /** the abort path waits for its outcome to be written: told instead of `ended` */
  #onRecorded: ((outcome: string) => void) | undefined;
  #result: AttemptResult = SUCCESS;
  #decision: Decision | undefined;
  #ended = false;
  /** Date.now() by which the handler must report progress (ctx.heartbeat) */
  #idleDeadline = 0;
  readonly #runtimeDeadline: number;
  #graceMs: number;
  /** success already written in the caller's transaction: nothing left to record */
  #succeededInTx = false;
  #holdsSlot = true;
  #log: Logger | undefined;
  #progress: ProgressReporter | undefined;

  constructor(
    readonly job: ClaimedJob,
    private readonly def: JobDefinition<unknown>,
    private readonly deps: AttemptDeps,
    /** the job's lease, renewed by the worker's heartbeater */
    readonly lease: HeldLease,
  ) {
    this.#graceMs = deps.abortGraceMs;
    this.#runtimeDeadline = this.startedAt + job.maxRuntimeMs;
  }

  get storage(): Storage {
    return this.deps.storage;
  }

  get effects(): EffectBatcher {
    return this.deps.effects;
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#reason) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Past its max runtime and the abort grace the lease is no longer renewed, whatever the handler does. */
  get pastMaxRuntime(): boolean {
    return Date.now() - this.startedAt >= this.job.maxRuntimeMs + this.#graceMs;
  }

  /**
   * This attempt's logger (job id, type and attempt bound), made on first use: a pino child per
   * job costs more than the rest of a no-op job's bookkeeping, and most jobs log at info only.
   */
  get log(): Logger {
    return (this.#log ??= this.deps.log.child({ jobId: this.job.id, type: this.job.type, attempt: this.job.attempts }));
  }

  /** `ctx.progress`'s coalescing writer, made on first use */
  get reporter(): ProgressReporter {
    return (this.#progress ??= new ProgressReporter(this, this.deps.progressIntervalMs));
  }

  /** the error this attempt's outcome records, once decided */
  get error(): { code: string; message: string } | null {
    return this.#decision?.error ?? null;
  }

  /** whether the handler still occupies its concurrency slot (false while only the finish is pending) */
  get holdsSlot(): boolean {
    return this.#holdsSlot;
  }

  /** Give the slot back (once). */
  freeSlot(): void {
    if (!this.#holdsSlot) return;
    this.#holdsSlot = false;
    this.deps.slotFreed(this);
  }

  abort(reason: AbortReason, graceMs?: number): void {
    if (this.#reason) return;
    if (graceMs !== undefined) this.#graceMs = graceMs;
    this.#reason = reason;
    this.#controller?.abort(reason);
    // once the handler's result is being recorded, an abort changes nothing but the signal
    if (this.#phase !== 'running') return;
    this.#phase = 'aborted';
    const { job, log } = this;
    const record = (result: AttemptResult) => new Promise<string>((resolve) => ((this.#onRecorded = resolve), this.#record(result)));
    const view = { job, log, graceMs: this.#graceMs, record, handlerStops: (ms: number) => this.#handlerStops(ms), freeSlot: () => this.freeSlot(), end: (outcome: string) => this.#end(outcome) };
    afterAbort(view, reason).catch((e: unknown) => this.#crashed(e));
  }

  /** Runs the handler; `deps.ended` hears how the attempt ended. */
  start(): void {
    this.#idleDeadline = this.startedAt + this.job.timeoutMs;
    this.deps.clock.watch(Math.min(this.#idleDeadline, this.#runtimeDeadline));
    let result: unknown;
    try {
      result = this.def.schema ? this.#validatedRun() : this.def.handler(this.job.payload, new AttemptContext(this));
    } catch (error) {
      result = Promise.reject(error);
    }
    // Taken on a later microtask even when the handler returned at once: the worker's
    // dispatch loop, which started this attempt, is not re-entered from inside it.
    Promise.resolve(result).then(
      (value) => this.#settled(true, value),
      (error: unknown) => this.#settled(false, error),
    );
  }

  /** The clock's question: a limit reached aborts; returns the next deadline (Infinity once the handler is done). */
  checkDeadlines(now: number): number {
    if (this.#phase !== 'running') return Infinity;
    if (now >= this.#runtimeDeadline) this.abort(new AbortReason('MAX_RUNTIME', `max runtime of ${this.job.maxRuntimeMs} ms reached`));
    else if (now >= this.#idleDeadline) this.abort(new AbortReason('TIMEOUT', `no progress for ${this.job.timeoutMs} ms`));
    else return Math.min(this.#idleDeadline, this.#runtimeDeadline);
    return Infinity;
  }

  /** The handler reported progress (ctx.heartbeat): refused once aborted, else the inactivity timeout restarts. */
  progress(): void {
    if (this.#reason) throw this.#reason;
    this.#idleDeadline = Date.now() + this.job.timeoutMs;
  }

  /** Throws the abort reason once the attempt was aborted. */
  throwIfAborted(): void {
    if (this.#reason) throw this.#reason;
  }

  renew(): Promise<boolean> {
    return this.deps.renew(this);
  }

  /** Whether the lease surely holds now: its local expiry, less a margin, is still ahead. */
  leaseSurelyHeld(): boolean {
    return performance.now() < this.lease.expiresAt - this.deps.leaseMarginMs;
  }

  /** A call of the handler found the lease gone: the attempt is aborted (LEASE_LOST); returns the error to throw. */
  leaseLost(what: string): LeaseLostError {
    this.abort(new AbortReason('LEASE_LOST', `lease no longer held (${what} refused)`));
    return new LeaseLostError(this.job.id, what);
  }

  succeededInTransaction(): void {
    this.#succeededInTx = true;
  }

  /** The completer wrote this attempt's finish (FinishSink). */
  written(res: FinishResult): void {
    try {
      this.#recorded(reportFinish(this, this.deps.log.isLevelEnabled('info'), this.#decision as Decision, this.#result, res, Date.now() - this.startedAt, this.job.maxAttempts));
    } catch (e) {
      this.#crashed(e);
    }
  }

  /** The completer gave up on this attempt's finish (FinishSink). */
  writeFailed(e: unknown): void {
    try {
      this.log.error({ event: 'job.finish_failed', err: (e as Error).message }, 'could not record the outcome; the lease will lapse and the sweeper will retry the job');
      this.#recorded('lost');
    } catch (err) {
      this.#crashed(err);
    }
  }

  async #validatedRun(): Promise<unknown> {
    const payload = await validateWithSchema(this.job.type, this.def.schema as NonNullable<JobDefinition<unknown>['schema']>, this.job.payload).catch((e: unknown) => {
      throw new PermanentFailure((e as Error).message, { cause: e });
    });
    return this.def.handler(payload, new AttemptContext(this));
  }

  /** The handler's promise settled: `ok` with its value, or not with its error. */
  #settled(ok: boolean, value: unknown): void {
    this.#handlerDone = true;
    if (this.#phase === 'aborted') {
      this.#onHandlerDone?.();
      return;
    }
    try {
      this.#phase = 'settled';
      this.freeSlot();
      this.#record(ok ? classify(value) : classifyError(value));
    } catch (e) {
      this.#crashed(e);
    }
  }

  /** Decide, and hand the finish to the completer (which tells `finished`), unless the handler already wrote it. */
  #record(result: AttemptResult): void {
    if (this.#succeededInTx && result.kind === 'success') {
      if (this.deps.log.isLevelEnabled('info')) {
        this.log.info({ event: 'job.succeeded', outcome: 'succeeded', durationMs: Date.now() - this.startedAt, inTransaction: true }, 'job succeeded (recorded in the handler\'s transaction)');
      }
      this.#recorded('succeeded');
      return;
    }
    const decision = decideFinish(this.job, result, this.def.retry ?? DEFAULT_RETRY_POLICY, this.deps.random);
    this.#result = result;
    this.#decision = decision;
    const finish = { id: this.job.id, leaseToken: this.job.leaseToken, ...decision };
    // the last progress report lands while the lease it is fenced by still holds
    if (this.#progress?.busy) void this.#progress.flush().then(() => this.deps.completer.submit(finish, this));
    else this.deps.completer.submit(finish, this);
  }

  #recorded(outcome: string): void {
    if (this.#onRecorded) this.#onRecorded(outcome);
    else this.#end(outcome);
  }

  /** Whether the handler has settled within `ms` (Infinity: whenever it does). */
  #handlerStops(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      if (this.#handlerDone) return resolve(true);
      const timer = ms === Infinity ? undefined : setTimeout(() => resolve(false), ms);
      timer?.unref();
      this.#onHandlerDone = () => (clearTimeout(timer), resolve(true));
      this.#stopWaiting = () => (clearTimeout(timer), resolve(false));
    });
  }

  /** Shutdown: a handler that ignored its abort is no longer waited for; its lease is left to lapse. */
  leaveToLapse(): void {
    this.#stopWaiting?.();
  }

  #crashed(e: unknown): void {
    this.deps.log.error({ event: 'job.crashed', jobId: this.job.id, err: (e as Error).message }, 'internal error running job');
    this.#end('lost');
  }

  /** Once: the slot is free and the worker hears the outcome. */
  #end(outcome: string): void {
    if (this.#ended) return;
    this.#ended = true;
    this.freeSlot();
    this.deps.ended(this, outcome);
  }
}
