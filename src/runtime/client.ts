/**
 * The client: enqueue jobs, read them back, and the operator's admin operations.
 * Everything is validated before storage is touched, so bad input writes nothing.
 */
import type { EnqueueOptions, JobDefaults } from '../core/index.js';
import {
  DEFAULT_JOB_DEFAULTS,
  DEFAULT_MAX_PAYLOAD_BYTES,
  InvalidStateError,
  JobNotFoundError,
  UnknownJobTypeError,
  ValidationError,
  buildNewJob,
  validateName,
} from '../core/index.js';
import type { AlertStateRow, AttemptRow, EffectRow, InsertOutcome, JobCount, JobQuery, JobRow, NewJob, QueueState, Storage, WorkerRow } from '../core/storage.js';
import type { LockRow, ScheduleRow } from '../core/schedules.js';
import { LocalBus } from './env.js';
import type { AnyJobDefinition, JobDefinition } from './job-definition.js';
import { JobRegistry, validateWithSchema } from './job-definition.js';
import { startSend } from './tracing.js';

export interface ClientOptions {
  storage: Storage;
  /**
   * The job types this client may enqueue. When given, an unknown type is refused and payloads
   * are checked against each type's schema. When omitted, any well-formed type is accepted
   * (e.g. a CLI enqueuing for workers elsewhere).
   */
  jobs?: readonly AnyJobDefinition[] | JobRegistry;
  defaults?: Partial<JobDefaults>;
  maxPayloadBytes?: number;
}

export type EnqueuedJob = JobRow & {
  /** false when an idempotency or unique key matched an existing job, which is returned instead */
  created: boolean;
  /** what the enqueue did: a new job, an existing one returned, or a waiting one replaced (debounce) */
  outcome: InsertOutcome;
};

export interface EnqueueItem {
  type: string;
  payload: unknown;
  options?: EnqueueOptions & { tx?: unknown };
}

export class Client {
  readonly storage: Storage;
  readonly registry: JobRegistry | null;
  readonly #defaults: JobDefaults;
  readonly #maxPayloadBytes: number;
  readonly #bus: LocalBus;

  constructor(opts: ClientOptions) {
    this.storage = opts.storage;
    this.registry = opts.jobs === undefined ? null : opts.jobs instanceof JobRegistry ? opts.jobs : new JobRegistry(opts.jobs);
    this.#defaults = { ...DEFAULT_JOB_DEFAULTS, ...opts.defaults };
    this.#maxPayloadBytes = opts.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
    this.#bus = LocalBus.for(opts.storage);
  }

  /** Enqueue one job. Pass `tx` to insert inside your own transaction (where the storage supports it). */
  async enqueue(type: string, payload: unknown, options: EnqueueOptions & { tx?: unknown } = {}): Promise<EnqueuedJob> {
    const [job] = await this.enqueueMany([{ type, payload, options }]);
    return job as EnqueuedJob;
  }

  /** Enqueue many jobs in one transaction: all are written, or (on bad input) none. */
  async enqueueMany(items: readonly EnqueueItem[]): Promise<EnqueuedJob[]> {
    if (items.length === 0) return [];
    const tx = items[0]?.options?.tx;
    for (const item of items) {
      if (!sameValueZero(item.options?.tx, tx)) throw new ValidationError('INVALID_OPTION', 'enqueueMany: every item must use the same tx');
    }
    if (tx !== undefined && !this.storage.capabilities.transactionalEnqueue) {
      throw new ValidationError('INVALID_OPTION', `the ${this.storage.dialect} storage cannot enqueue inside your transaction`);
    }
    // Per job this is the hot path of a bulk enqueue: validate synchronously and await only a
    // payload schema (the one asynchronous check), item by item as before.
    const rows: NewJob[] = [];
    for (const item of items) {
      const row = this.#prepare(item);
      rows.push(row instanceof Promise ? await row : row);
    }
    const send = startSend(rows);
    let results;
    try {
      results = await this.storage.jobs.insert({ jobs: rows, ...tx === undefined ? undefined : { tx } });
    } catch (e) {
      send?.failed(e);
      throw e;
    }
    send?.written(results.map((r) => r.job.id));
    let created = false;
    const jobs: EnqueuedJob[] = [];
    // Adapters hand out fresh rows (the conformance suite checks it), so each is marked in
    // place rather than copied (a spread of ~22 fields cost more per job than the insert).
    // Only a batch that met an existing row can hold one object twice: then copy repeats.
    const seen = results.every((r) => r.created) ? null : new Set<JobRow>();
    // a debounce that replaced a waiting job moved its run time: wake local workers as for a new one
    created ||= results.some((r) => r.outcome === 'replaced');
    for (const r of results) {
      created ||= r.created;
      let job = r.job as EnqueuedJob;
      if (seen !== null) {
        if (seen.has(r.job)) job = { ...r.job } as EnqueuedJob;
        else seen.add(r.job);
      }
      job.created = r.created;
      job.outcome = r.outcome;
      jobs.push(job);
    }
    // Inside a caller's transaction the job is not visible until they commit; waking local
    // workers early only costs them one empty claim.
    if (created) this.#bus.jobsEnqueued();
    return jobs;
  }

  /** Validation and defaults for one item; a promise only when a payload schema must run. */
  #prepare(item: EnqueueItem): NewJob | Promise<NewJob> {
    const options = item.options ?? NO_OPTIONS;
    const now = options.unique?.mode === 'period' ? Date.now() : 0;
    if (!this.registry) return buildNewJob(item.type, item.payload, options, this.#defaults, this.#maxPayloadBytes, now);
    const def = this.registry.get(item.type);
    if (!def) throw new UnknownJobTypeError(item.type, this.registry.types);
    const defaults = this.#defaultsFor(def);
    const build = (payload: unknown) => buildNewJob(item.type, payload, withKeyOf(def, payload, options), defaults, this.#maxPayloadBytes, now);
    if (!def.schema) return build(item.payload);
    return validateWithSchema(item.type, def.schema, item.payload).then(build);
  }

  /** A job type's own policies over the client's defaults (read per item: a definition is the user's object). */
  #defaultsFor(def: JobDefinition<unknown>): JobDefaults {
    return {
      queue: def.queue ?? this.#defaults.queue,
      priority: def.priority ?? this.#defaults.priority,
      maxAttempts: def.maxAttempts ?? this.#defaults.maxAttempts,
      timeoutMs: def.timeoutMs ?? this.#defaults.timeoutMs,
      maxRuntimeMs: def.maxRuntimeMs ?? this.#defaults.maxRuntimeMs,
    };
  }

  async getJob(id: string): Promise<JobRow> {
    const job = await this.storage.jobs.get({ id: checkId(id) });
    if (!job) throw new JobNotFoundError(id);
    return job;
  }

  listJobs(query: Partial<JobQuery> = {}): Promise<JobRow[]> {
    const limit = query.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new ValidationError('INVALID_OPTION', 'limit must be 1-1000');
    return this.storage.jobs.list({ ...query, beforeId: query.beforeId === undefined ? undefined : checkId(query.beforeId), limit });
  }

  listAttempts(jobId: string): Promise<AttemptRow[]> {
    return this.storage.attempts.list({ jobId: checkId(jobId) });
  }

  countJobs(): Promise<JobCount[]> {
    return this.storage.queues.counts();
  }

  listWorkers(): Promise<WorkerRow[]> {
    return this.storage.workers.list();
  }

  /** Every schedule, with its next and last run. */
  listSchedules(): Promise<ScheduleRow[]> {
    return this.storage.schedules.list();
  }

  /** Locks and semaphore slots currently held: holder, since when, expires when. */
  listLocks(params?: { name?: string }): Promise<LockRow[]> {
    return this.storage.locks.list(params);
  }

  /** Each alert rule's state (firing or ok, since when, the value that moved it); a rule that never fired has none. */
  /** Stop claims from a queue on every worker (running jobs finish; enqueues and schedules go on). */
  pauseQueue(queue: string): Promise<QueueState> {
    return this.storage.queues.pause({ queue: validateName('queue', queue) });
  }

  /** Claims from the queue again; this process's idle workers look at once. */
  async resumeQueue(queue: string): Promise<QueueState> {
    const state = await this.storage.queues.resume({ queue: validateName('queue', queue) });
    this.#bus.jobsEnqueued();
    return state;
  }

  /** Queues ever paused or resumed, with their state. */
  queueStates(): Promise<QueueState[]> {
    return this.storage.queues.states();
  }

  listAlerts(): Promise<AlertStateRow[]> {
    return this.storage.alerts.list();
  }

  listEffects(params: { jobId?: string; limit?: number } = {}): Promise<EffectRow[]> {
    return this.storage.effects.list({ ...params, limit: params.limit ?? 100 });
  }

  /** Make a failed, dead, cancelled or waiting job due now, with its attempt budget reset. */
  async retryNow(id: string): Promise<JobRow> {
    const { job, applied } = await this.storage.jobs.retry({ id: checkId(id) });
    if (!job) throw new JobNotFoundError(id);
    if (!applied) throw new InvalidStateError(id, job.status, 'retry');
    this.#bus.jobsEnqueued();
    return job;
  }

  /** Cancel a waiting or running job for good; a running handler's signal fires. */
  async cancel(id: string): Promise<JobRow> {
    const { job, applied } = await this.storage.jobs.cancel({ id: checkId(id) });
    if (!job) throw new JobNotFoundError(id);
    if (!applied) throw new InvalidStateError(id, job.status, 'cancel');
    this.#bus.jobCancelled(job.id);
    return job;
  }

  /**
   * Due jobs whose type no live worker has a handler for: they wait, they are never failed
   * for it. `aliveWithinMs` decides which workers count as live.
   */
  async unhandledJobs(aliveWithinMs = 60_000): Promise<{ type: string; queue: string; due: number }[]> {
    const [counts, workers, now] = await Promise.all([this.storage.queues.counts(), this.storage.workers.list(), this.storage.now()]);
    return findUnhandled(counts, workers, now, aliveWithinMs);
  }
}

/** Pure: which due (queue, type) pairs no live worker serves. */
export function findUnhandled(counts: readonly JobCount[], workers: readonly WorkerRow[], now: Date, aliveWithinMs: number) {
  const live = workers.filter((w) => now.getTime() - w.heartbeatAt.getTime() <= aliveWithinMs);
  const served = (type: string, queue: string) => live.some((w) => w.types.includes(type) && (w.queues === null || w.queues.includes(queue)));
  return counts
    .filter((c) => c.due > 0 && (c.status === 'queued' || c.status === 'failed') && !served(c.type, c.queue))
    .map((c) => ({ type: c.type, queue: c.queue, due: c.due }));
}

const NO_OPTIONS: EnqueueOptions = Object.freeze({});

/** Set membership equality (as the `new Set(txs).size` check this replaces): NaN equals NaN. */
function sameValueZero(a: unknown, b: unknown): boolean {
  return a === b || (a !== a && b !== b);
}

function checkId(id: string): string {
  if (typeof id !== 'string' || !/^[1-9][0-9]{0,18}$/.test(id)) throw new ValidationError('INVALID_OPTION', `not a job id: ${JSON.stringify(id)}`);
  return id;
}

export function createClient(opts: ClientOptions): Client {
  return new Client(opts);
}

/** The options with the definition's concurrency key filled in, unless the enqueue gave one. */
function withKeyOf(def: JobDefinition<unknown>, payload: unknown, options: EnqueueOptions & { tx?: unknown }): EnqueueOptions & { tx?: unknown } {
  if (options.concurrencyKey !== undefined || !def.concurrencyKey) return options;
  const key = def.concurrencyKey(payload);
  return key === null || key === undefined ? options : { ...options, concurrencyKey: key };
}
