/**
 * One attempt of one claimed job: builds the handler's context, enforces the inactivity
 * timeout and the max runtime, turns whatever happened into a decision, and writes it as one
 * fenced finish. `slotFreed` fires as soon as the handler is done with its slot (the next job
 * may start); `run()` resolves once the outcome is written and the lease released.
 */
import type { AttemptResult, RetryPolicy } from '../core/index.js';
import { AbortReason, DEFAULT_RETRY_POLICY, PermanentFailure, decideFinish, errorInfo, isJobOutcome } from '../core/index.js';
import type { ClaimedJob, FinishResult, FinishParams, Storage } from '../core/storage.js';
import { AttemptContext, type ContextHost } from './attempt-context.js';
import type { Logger } from './env.js';
import type { JobDefinition } from './job-definition.js';
import { validateWithSchema } from './job-definition.js';

/** What attempts need from their worker: one object, shared by all of the worker's attempts. */
export interface AttemptDeps {
  storage: Storage;
  finish: (p: FinishParams) => Promise<FinishResult>;
  /** renew this lease now; resolves false when it is lost (and the attempt was aborted) */
  renew: (attempt: Attempt) => Promise<boolean>;
  log: Logger;
  random: () => number;
  /** how long a handler gets to stop after its signal fires before its slot is taken back */
  abortGraceMs: number;
  /** called once per attempt, when its handler no longer needs its concurrency slot */
  slotFreed?: (attempt: Attempt) => void;
}

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

/** setTimeout's largest delay; a later deadline is reached by re-arming. */
const MAX_TIMER_MS = 2_147_483_647;

export class Attempt implements ContextHost {
  readonly startedAt = Date.now();
  /** performance.now() at start, for the run time that sizes claim batches */
  readonly launchedAt = performance.now();
  /**
   * Made when the handler first reads `ctx.signal` (or on abort after that): most handlers
   * never do, and an AbortController with its listener was a tenth of the runtime's own cost
   * per job. Until then `#reason` and `#aborted` carry the abort.
   */
  #controller: AbortController | undefined;
  #reason: AbortReason | undefined;
  #onAbort: (() => void) | undefined;
  /** local time by which the lease surely lapses unless renewed (kept by the heartbeater) */
  expiresAt: number;
  /**
   * One timer per attempt for both limits: it fires at the earlier of the inactivity deadline
   * and the max-runtime deadline (Date.now() times), and on firing re-checks both, re-arming
   * when a heartbeat moved the inactivity deadline. A heartbeat then only moves a number.
   */
  #timer: NodeJS.Timeout | undefined;
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
    this.deps.slotFreed?.(this);
  }

  abort(reason: AbortReason, graceMs?: number): void {
    if (this.#reason) return;
    if (graceMs !== undefined) this.#graceMs = graceMs;
    this.#reason = reason;
    this.#controller?.abort(reason);
    this.#onAbort?.();
  }

  /** Runs the attempt; resolves to how it ended (a job status, or 'lost' when not ours to record). */
  async run(): Promise<string> {
    this.#idleDeadline = this.startedAt + this.job.timeoutMs;
    this.#armTimer();
    const settled = this.#invoke();
    // whichever comes first, the handler's result or an abort: one promise settled by both
    const first = await new Promise<Settled | 'aborted'>((resolve) => {
      if (this.#reason) resolve('aborted');
      else this.#onAbort = () => resolve('aborted');
      void settled.then(resolve);
    });
    clearTimeout(this.#timer);
    if (first !== 'aborted') {
      this.freeSlot();
      return this.#record(classify(first));
    }
    const reason = this.#reason as AbortReason;
    let outcome = 'lost';
    if (reason.code === 'TIMEOUT') outcome = await this.#record({ kind: 'timeout', timeoutMs: this.job.timeoutMs });
    else if (reason.code === 'MAX_RUNTIME') outcome = await this.#record({ kind: 'max_runtime', maxRuntimeMs: this.job.maxRuntimeMs });
    else if (reason.code === 'SHUTDOWN') outcome = await this.#record({ kind: 'shutdown' });
    else this.log.warn({ event: reason.code === 'CANCELLED' ? 'job.cancelled' : 'job.lease_lost' }, reason.message);
    // The outcome is written (or not ours to write). Give the handler a grace period to
    // notice its signal; past it the slot is taken back and whatever it does later is void.
    const late = await Promise.race([settled.then(() => 'stopped' as const), delay(this.#graceMs).then(() => 'ignored' as const)]);
    if (late === 'ignored') {
      this.log.warn({ event: 'job.abandoned', graceMs: this.#graceMs }, 'handler ignored its abort signal; slot freed, its late result will be discarded');
    }
    this.freeSlot();
    return outcome;
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

  #armTimer(): void {
    const at = Math.min(this.#idleDeadline, this.#runtimeDeadline);
    this.#timer = setTimeout(() => this.#onTimer(), Math.min(MAX_TIMER_MS, Math.max(0, at - Date.now())));
  }

  #onTimer(): void {
    if (this.#reason) return;
    const now = Date.now();
    if (now >= this.#runtimeDeadline) this.abort(new AbortReason('MAX_RUNTIME', `max runtime of ${this.job.maxRuntimeMs} ms reached`));
    else if (now >= this.#idleDeadline) this.abort(new AbortReason('TIMEOUT', `no progress for ${this.job.timeoutMs} ms`));
    else this.#armTimer();
  }

  async #invoke(): Promise<Settled> {
    try {
      let payload = this.job.payload;
      if (this.def.schema) payload = await validateWithSchema(this.job.type, this.def.schema, payload).catch((e: unknown) => {
        throw new PermanentFailure((e as Error).message, { cause: e });
      });
      return { ok: true, value: await this.def.handler(payload, new AttemptContext(this)) };
    } catch (error) {
      return { ok: false, error };
    }
  }

  async #record(result: AttemptResult): Promise<string> {
    const info = this.deps.log.isLevelEnabled('info');
    const policy: RetryPolicy = this.def.retry ?? DEFAULT_RETRY_POLICY;
    const decision = decideFinish(this.job, result, policy, this.deps.random);
    if (this.#succeededInTx && result.kind === 'success') {
      if (info) this.log.info({ event: 'job.succeeded', outcome: 'succeeded', durationMs: Date.now() - this.startedAt, inTransaction: true }, 'job succeeded (recorded in the handler\'s transaction)');
      return 'succeeded';
    }
    let res: FinishResult;
    try {
      res = await this.deps.finish({ id: this.job.id, leaseToken: this.job.leaseToken, ...decision });
    } catch (e) {
      this.log.error({ event: 'job.finish_failed', err: (e as Error).message }, 'could not record the outcome; the lease will lapse and the sweeper will retry the job');
      return 'lost';
    }
    const durationMs = Date.now() - this.startedAt;
    if (!res.applied) {
      this.log.warn({ event: 'job.lease_lost', outcome: decision.attempt.outcome, durationMs }, 'lease lost before the outcome was recorded; result discarded');
      return 'lost';
    }
    if (decision.status === 'succeeded') {
      if (info) this.log.info({ event: 'job.succeeded', outcome: decision.attempt.outcome, durationMs, maxAttempts: this.job.maxAttempts }, 'job succeeded');
      return 'succeeded';
    }
    const fields = { outcome: decision.attempt.outcome, durationMs, maxAttempts: this.job.maxAttempts };
    switch (decision.status) {
      case 'failed':
        this.log.warn({ event: 'job.failed', ...fields, nextDelayMs: decision.runAfterMs, error: decision.error?.message }, 'job failed; will retry');
        break;
      case 'dead':
        this.log.error({ event: 'job.dead', ...fields, error: decision.error?.message }, 'job is dead');
        break;
      case 'cancelled':
        if (info) this.log.info({ event: 'job.cancelled', ...fields }, 'job cancelled by its handler');
        break;
      case 'queued':
        if (result.kind === 'shutdown') this.log.warn({ event: 'job.handed_back', ...fields }, 'shutdown deadline: lease handed back, job due now');
        else if (info) this.log.info({ event: 'job.snoozed', ...fields, delayMs: decision.runAfterMs }, 'job snoozed');
        break;
    }
    return result.kind === 'shutdown' ? 'handed_back' : result.kind === 'snooze' ? 'snoozed' : decision.status;
  }
}

function classify(s: Settled): AttemptResult {
  if (s.ok) {
    const v = s.value;
    if (isJobOutcome(v)) {
      if (v.kind === 'snooze') return { kind: 'snooze', delayMs: v.delayMs };
      if (v.kind === 'cancel') return { kind: 'cancel', reason: v.reason };
      return { kind: 'permanent', error: { code: 'PERMANENT_FAILURE', message: v.reason } };
    }
    return { kind: 'success' };
  }
  if (s.error instanceof PermanentFailure) return { kind: 'permanent', error: errorInfo(s.error) };
  return { kind: 'error', error: s.error };
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}
