/**
 * `runJob`: one attempt of a job's handler, without storage or a worker. The payload goes
 * through what the worker does to it (JSON, the definition's schema), the context is a fake
 * that records what the handler asked of it, and the result is what the worker would record.
 */
import { pino } from 'pino';
import {
  DEFAULT_JOB_DEFAULTS,
  DEFAULT_RETRY_POLICY,
  LeaseLostError,
  PermanentFailure,
  buildNewJob,
  encodeProgress,
  decideFinish,
  validateEffectKey,
  type AttemptResult,
  type ErrorInfo,
} from '../core/index.js';
import type { ClaimedJob } from '../core/storage.js';
import { classify, classifyError } from '../runtime/attempt-report.js';
import type { Logger } from '../runtime/env.js';
import type { JobContext, JobDefinition, ParentResult } from '../runtime/job-definition.js';
import { validateWithSchema } from '../runtime/job-definition.js';

/** Options for `runJob`: the context the handler runs in. */
export interface RunJobOptions {
  /** which attempt this is, 1-based (default 1): with the job's maxAttempts it decides failed or dead */
  attempt?: number;
  /** fields of `ctx.job` to set (id, queue, maxAttempts, createdAt…); the rest come from the definition */
  job?: Partial<ClaimedJob>;
  /** the handler's `ctx.signal` (default: never aborted); abort it to test how the handler stops */
  signal?: AbortSignal;
  /** effects already recorded, by key: `ctx.once(key)` returns the result without running its function, as on a retry */
  effects?: Readonly<Record<string, unknown>>;
  /** the lease is gone: `ctx.heartbeat()`, `ctx.once()` and `ctx.succeedInTransaction()` throw `LeaseLostError` */
  leaseLost?: boolean;
  /** what `ctx.parents()` answers: the workflow parents and their results (default none) */
  parents?: readonly ParentResult[];
  /** `ctx.log` (default: a silent logger) */
  logger?: Logger;
  /** the retry policy's jitter (default Math.random) */
  random?: () => number;
}

/** How one attempt ended, as the worker would record it, and what the handler did with its context. */
export interface JobRun {
  /** what the job becomes: 'failed' will retry after `retryDelayMs`, 'snoozed' runs again after `delayMs` */
  status: 'succeeded' | 'failed' | 'dead' | 'cancelled' | 'snoozed';
  /** what the handler returned (an outcome of snooze/cancel/fail included) */
  value: unknown;
  /** what the handler threw (or the schema's ValidationError wrapped in PermanentFailure) */
  error: unknown;
  /** the error as history records it (code, message) */
  errorInfo: ErrorInfo | null;
  /** status 'failed': the delay before the next attempt */
  retryDelayMs: number | null;
  /** status 'snoozed': the delay the handler asked for */
  delayMs: number | null;
  /** the job the handler saw as `ctx.job` */
  job: ClaimedJob;
  /** calls of `ctx.heartbeat()` */
  heartbeats: number;
  /** every `ctx.once(key, fn)` call in order: whether `fn` ran, and the result returned */
  once: {
    /** the effect's key */
    key: string;
    /** false when a recorded result was returned instead */
    ran: boolean;
    /** what `ctx.once` returned */
    result: unknown;
  }[];
  /** every effect recorded after this attempt, by key: pass it as `effects` to run the retry */
  effects: Record<string, unknown>;
  /** the `tx` of each `ctx.succeedInTransaction(tx)` call */
  succeededInTransaction: unknown[];
  /** every `ctx.progress(value, note)` call in order, as stored (the value parsed back from its JSON) */
  progress: {
    /** the value reported */
    value: unknown;
    /** its note, or null */
    note: string | null;
  }[];
  /** status 'succeeded': the result stored with the job (the returned value as JSON gives it back), else undefined */
  result: unknown;
}

/** The recording `ctx`: what a handler may call, with nothing behind it. */
class FakeContext implements JobContext {
  heartbeats = 0;
  readonly onceCalls: JobRun['once'] = [];
  readonly effects: Record<string, unknown>;
  readonly txs: unknown[] = [];
  readonly reports: JobRun['progress'] = [];

  constructor(
    readonly job: ClaimedJob,
    readonly signal: AbortSignal,
    readonly log: Logger,
    effects: Readonly<Record<string, unknown>>,
    private readonly leaseLost: boolean,
    private readonly parentResults: readonly ParentResult[],
  ) {
    this.effects = { ...effects };
  }

  get attempt(): number {
    return this.job.attempts;
  }

  /** As the real context: refused once aborted or when the lease is gone. */
  #check(what: string): void {
    this.signal.throwIfAborted();
    if (this.leaseLost) throw new LeaseLostError(this.job.id, what);
  }

  heartbeat = async (): Promise<void> => {
    this.heartbeats++;
    this.#check('heartbeat');
  };

  once = async <T>(key: string, fn: () => T | Promise<T>): Promise<T> => {
    validateEffectKey(key);
    this.#check(`effect ${key}`);
    if (Object.hasOwn(this.effects, key)) {
      const result = this.effects[key] as T;
      this.onceCalls.push({ key, ran: false, result });
      return result;
    }
    const result = await fn();
    // stored as JSON, as the effect ledger keeps it: a retry gets the parsed copy
    this.effects[key] = result === undefined ? null : JSON.parse(JSON.stringify(result));
    this.onceCalls.push({ key, ran: true, result });
    return result;
  };

  progress = (value: unknown, note?: string): void => {
    this.#check('progress');
    const v = encodeProgress(value, note);
    this.reports.push({ value: JSON.parse(v.json) as unknown, note: v.note });
  };

  parents = async (): Promise<ParentResult[]> => {
    this.#check('parents');
    return this.parentResults.map((p) => ({ ...p }));
  };

  succeedInTransaction = async (tx: unknown): Promise<void> => {
    this.#check('completion');
    this.txs.push(tx);
  };
}

/** The claimed job a handler sees: the definition's policies, the payload as JSON gives it back. */
function claimedJob(def: JobDefinition<unknown>, payload: unknown, opts: RunJobOptions): ClaimedJob {
  const defaults = {
    queue: def.queue ?? DEFAULT_JOB_DEFAULTS.queue,
    priority: def.priority ?? DEFAULT_JOB_DEFAULTS.priority,
    maxAttempts: def.maxAttempts ?? DEFAULT_JOB_DEFAULTS.maxAttempts,
    timeoutMs: def.timeoutMs ?? DEFAULT_JOB_DEFAULTS.timeoutMs,
    maxRuntimeMs: def.maxRuntimeMs ?? DEFAULT_JOB_DEFAULTS.maxRuntimeMs,
  };
  // the enqueue's checks (type name, JSON payload and its size) throw here as they would there
  const row = buildNewJob(def.type, payload, {}, defaults);
  const now = new Date();
  const key = def.concurrencyKey?.(payload);
  return {
    id: '1', queue: row.queue, type: row.type, payload: JSON.parse(JSON.stringify(row.payload)) as unknown, status: 'running', priority: row.priority,
    runAt: now, attempts: opts.attempt ?? 1, maxAttempts: row.maxAttempts, idempotencyKey: null, lockedBy: 'test-worker', leaseToken: 'test-lease',
    lockedUntil: new Date(now.getTime() + 30_000), heartbeatAt: now, startedAt: now, finishedAt: null, lastErrorCode: null, lastError: null,
    timeoutMs: row.timeoutMs, maxRuntimeMs: row.maxRuntimeMs, createdAt: now, updatedAt: now,
    ...(key === null || key === undefined ? {} : { concurrencyKey: key }),
    ...opts.job,
  };
}

/**
 * Run one attempt of `def`'s handler on `payload` (what enqueue takes: the schema's input) with
 * a recording fake context; resolves to what the worker would record. Time limits are not enforced: abort `opts.signal` for that.
 */
export async function runJob<P, T extends string, I>(def: JobDefinition<P, T, I>, payload: NoInfer<I>, opts: RunJobOptions = {}): Promise<JobRun> {
  const d = def as JobDefinition<unknown>;
  const job = claimedJob(d, payload, opts);
  const ctx = new FakeContext(job, opts.signal ?? new AbortController().signal, opts.logger ?? pino({ level: 'silent' }), opts.effects ?? {}, opts.leaseLost ?? false, opts.parents ?? []);
  let result: AttemptResult;
  let value: unknown;
  let error: unknown;
  try {
    const input = d.schema
      ? await validateWithSchema(job.type, d.schema, job.payload).catch((e: unknown) => {
          throw new PermanentFailure((e as Error).message, { cause: e });
        })
      : job.payload;
    value = await d.handler(input, ctx);
    result = classify(value);
  } catch (e) {
    error = e;
    result = classifyError(e);
  }
  const decision = decideFinish(job, result, d.retry ?? DEFAULT_RETRY_POLICY, opts.random ?? Math.random);
  const snoozed = result.kind === 'snooze' ? result.delayMs : null;
  return {
    status: snoozed !== null ? 'snoozed' : (decision.status as Exclude<JobRun['status'], 'snoozed'>),
    value,
    error,
    errorInfo: decision.error ?? null,
    retryDelayMs: decision.status === 'failed' ? (decision.runAfterMs ?? 0) : null,
    delayMs: snoozed,
    job,
    heartbeats: ctx.heartbeats,
    once: ctx.onceCalls,
    effects: ctx.effects,
    succeededInTransaction: ctx.txs,
    progress: ctx.reports,
    result: decision.result === undefined ? undefined : (JSON.parse(decision.result) as unknown),
  };
}
