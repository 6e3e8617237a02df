/**
 * One attempt of one claimed job: builds the handler's context, enforces the inactivity
 * timeout and the max runtime, turns whatever happened into a decision, and writes it as one
 * fenced finish. `slotFreed` fires as soon as the handler is done with its slot (the next job
 * may start); `ended` once the outcome is written and the lease released.
 *
 * A job that ends without an abort runs as callbacks, not as async functions racing promises:
 * the handler's result is taken with one `then`, the finish is handed to the completer with
 * the attempt itself as the one to tell. The async frames, promises and closures of the
 * earlier shape were half of what the runtime allocated per job. The abort path (timeouts,
 * lost leases, shutdown) is rare and stays a plain async function.
 */
import type { AttemptResult, Decision } from '../core/index.js';
import { AbortReason, DEFAULT_RETRY_POLICY, PermanentFailure, decideFinish, errorInfo, isJobOutcome } from '../core/index.js';
import type { ClaimedJob, FinishResult, Storage } from '../core/storage.js';
import type { AttemptClock, Timed } from './attempt-clock.js';
import { AttemptContext, type ContextHost } from './attempt-context.js';
import type { Completer, FinishSink } from './completer.js';
import type { EffectBatcher } from './effect-batcher.js';
import type { Logger } from './env.js';
import type { JobDefinition } from './job-definition.js';
import { validateWithSchema } from './job-definition.js';
import { reportFinish } from './attempt-report.js';

/** What attempts need from their worker: one object, shared by all of the worker's attempts. */
export interface AttemptDeps {
  storage: Storage;
  effects: EffectBatcher;
  completer: Pick<Completer, 'submit'>;
  clock: Pick<AttemptClock, 'watch'>;
  /** renew this lease now; resolves false when it is lost (and the attempt was aborted) */
  renew: (attempt: Attempt) => Promise<boolean>;
  log: Logger;
  random: () => number;
  /** how long a handler gets to stop after its signal fires before its slot is taken back */
  abortGraceMs: number;
  /** called once per attempt, when its handler no longer needs its concurrency slot */
  slotFreed: (attempt: Attempt) => void;
  /** called once per attempt, when it is over: its outcome (a job status, 'lost', …) written or not ours to write */
  ended: (attempt: Attempt, outcome: string) => void;
}

/** handler running → settled (its result being recorded) | aborted (the abort path records) */
type Phase = 'running' | 'settled' | 'aborted';

const SUCCESS: AttemptResult = Object.freeze({ kind: 'success' });

export class Attempt implements ContextHost, Timed, FinishSink {
  readonly startedAt = Date.now();
  /** performance.now() at start, for the run time that sizes claim batches */
  readonly launchedAt = performance.now();
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
  /** the abort path waits for a late handler: told when it settles */
  #onHandlerDone: (() => void) | undefined;
  /** the abort path waits for its outcome to be written: told instead of `ended` */
  #onRecorded: ((outcome: string) => void) | undefined;
  #result: AttemptResult = SUCCESS;
  #decision: Decision | undefined;
  #ended = false;
  /** local time by which the lease surely lapses unless renewed (kept by the heartbeater) */
  expiresAt: number;
  /** Date.now() by which the handler must report progress (ctx.heartbeat) */
  #idleDeadline = 0;
  readonly #runtimeDeadline: number;
  #graceMs: number;
  /** success already written in the caller's transaction: nothing left to record */
  #succeededInTx = false;
  #holdsSlot = true;
  #log: Logger | undefined;

  constructor(
    readonly job: ClaimedJob,
    private readonly def: JobDefinition<unknown>,
    private readonly deps: AttemptDeps,
  ) {
    this.#graceMs = deps.abortGraceMs;
    this.expiresAt = job.lockedUntil.getTime();
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

  /** why the attempt was aborted, once it was */
  get abortReason(): AbortReason | undefined {
    return this.#reason;
  }

  /** Past its max runtime the lease is no longer renewed, whatever the handler does. */
  get pastMaxRuntime(): boolean {
    return Date.now() - this.startedAt >= this.job.maxRuntimeMs;
  }

  /**
   * This attempt's logger (job id, type and attempt bound), made on first use: a pino child per
   * job costs more than the rest of a no-op job's bookkeeping, and most jobs log at info only.
   */
  get log(): Logger {
    return (this.#log ??= this.deps.log.child({ jobId: this.job.id, type: this.job.type, attempt: this.job.attempts }));
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
    this.#afterAbort(reason).catch((e: unknown) => this.#crashed(e));
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

  renew(): Promise<boolean> {
    return this.deps.renew(this);
  }

  succeededInTransaction(): void {
    this.#succeededInTx = true;
  }

  /** The completer wrote this attempt's finish (FinishSink). */
  finished(res: FinishResult): void {
    try {
      this.#recorded(this.#report(res));
    } catch (e) {
      this.#crashed(e);
    }
  }

  /** The completer gave up on this attempt's finish (FinishSink). */
  finishFailed(e: unknown): void {
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
      this.#record(!ok ? classifyError(value) : value === undefined ? SUCCESS : classify(value));
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
    this.deps.completer.submit({ id: this.job.id, leaseToken: this.job.leaseToken, ...decision }, this);
  }

  #recorded(outcome: string): void {
    if (this.#onRecorded) this.#onRecorded(outcome);
    else this.#end(outcome);
  }

  /** Logs how the finish went; returns the attempt's outcome. */
  #report(res: FinishResult): string {
    return reportFinish(this, this.deps.log.isLevelEnabled('info'), this.#decision as Decision, this.#result, res, Date.now() - this.startedAt, this.job.maxAttempts);
  }

  /**
   * Aborted while the handler ran: record why (a lost lease or a cancel is not ours to record),
   * then give the handler a grace period to notice its signal; past it the slot is taken back
   * and whatever it does later is void.
   */
  async #afterAbort(reason: AbortReason): Promise<void> {
    const result: AttemptResult | null =
      reason.code === 'TIMEOUT' ? { kind: 'timeout', timeoutMs: this.job.timeoutMs }
      : reason.code === 'MAX_RUNTIME' ? { kind: 'max_runtime', maxRuntimeMs: this.job.maxRuntimeMs }
      : reason.code === 'SHUTDOWN' ? { kind: 'shutdown' }
      : null;
    let outcome = 'lost';
    if (result) {
      outcome = await new Promise<string>((resolve) => {
        this.#onRecorded = resolve;
        this.#record(result);
      });
    } else {
      this.log.warn({ event: reason.code === 'CANCELLED' ? 'job.cancelled' : 'job.lease_lost' }, reason.message);
    }
    const late = await new Promise<'stopped' | 'ignored'>((resolve) => {
      if (this.#handlerDone) return resolve('stopped');
      this.#onHandlerDone = () => resolve('stopped');
      setTimeout(() => resolve('ignored'), this.#graceMs).unref();
    });
    if (late === 'ignored') {
      this.log.warn({ event: 'job.abandoned', graceMs: this.#graceMs }, 'handler ignored its abort signal; slot freed, its late result will be discarded');
    }
    this.freeSlot();
    this.#end(outcome);
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

/** What a handler's return value means: a success, unless it is a snooze, cancel or fail outcome. */
function classify(v: unknown): AttemptResult {
  if (isJobOutcome(v)) {
    if (v.kind === 'snooze') return { kind: 'snooze', delayMs: v.delayMs };
    if (v.kind === 'cancel') return { kind: 'cancel', reason: v.reason };
    return { kind: 'permanent', error: { code: 'PERMANENT_FAILURE', message: v.reason } };
  }
  return SUCCESS;
}

function classifyError(error: unknown): AttemptResult {
  if (error instanceof PermanentFailure) return { kind: 'permanent', error: errorInfo(error) };
  return { kind: 'error', error };
}
