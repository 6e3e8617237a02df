/**
 * The client: enqueue jobs (typed by the job definitions it is given), declare schedules, read
 * jobs back, and the operator's admin operations. Everything is validated before storage is
 * touched, so bad input writes nothing. The enqueue path is in client-enqueue.ts, its input
 * checks in client-input.ts.
 */
import type { JobDefaults } from '../core/index.js';
import { DEFAULT_JOB_DEFAULTS, DEFAULT_MAX_PAYLOAD_BYTES, JobNotFoundError, ValidationError, validateName } from '../core/index.js';
import type { AlertStateRow, AttemptRow, EffectRow, JobCount, JobDependencies, JobQuery, JobRow, OperatorRef, QueueState, Storage, WorkerRow } from '../core/storage.js';
import type { LockRow, ScheduleInput, ScheduleRow } from '../core/schedules.js';
import { checkId, checkSchedule } from './client-input.js';
import { Enqueuer } from './client-enqueue.js';
import { type FlowItem, type FlowOptions, enqueueFlow } from './client-workflows.js';
import { Batches } from './client-batches.js';
import { LocalBus } from './env.js';
import { API_OPERATOR, cancelJob, retryJob } from './operator-jobs.js';
import { JobRegistry } from './job-definition.js';
import type { EnqueueItem, EnqueueItemOptions, EnqueuedJob, JobInput, JobList, JobTypeName, ScheduleFor, UnhandledJobs } from './job-types.js';
import { syncSchedules, upsertSchedule } from './scheduler.js';

export type { EnqueueItem, EnqueueItemOptions, EnqueuedJob, JobInput, JobList, JobOf, JobTypeName, ScheduleFor, UnhandledJobs } from './job-types.js';

/**
 * What `createClient` takes.
 *
 * @typeParam J - the list of job definitions, inferred from `jobs`
 */
export interface ClientOptions<J extends JobList = JobList> {
  /** Where jobs are kept: `await openStorage(url)`, or an adapter's own factory. */
  storage: Storage;
  /**
   * The job types this client may enqueue: the same list the worker gets. When given, an unknown
   * type is refused, payloads are checked against each type's schema, each type's policies are
   * the defaults of its jobs, and type names and payloads are checked at compile time. When
   * omitted, any well-formed type and JSON payload is accepted (e.g. for workers elsewhere).
   */
  jobs?: J;
  /** Defaults for jobs whose type (or the enqueue) sets none: `queue`, `priority`, `maxAttempts`, `timeoutMs`, `maxRuntimeMs`. */
  defaults?: Partial<JobDefaults>;
  /** The largest payload accepted, as UTF-8 JSON (default 64 KiB): keep references in jobs, not data. */
  maxPayloadBytes?: number;
}

/**
 * Enqueue jobs, read them back, manage schedules, and the operator's admin operations. Make one
 * with {@link createClient}. Everything is validated before storage is touched: bad input throws
 * a `ValidationError` and writes nothing.
 *
 * @typeParam J - the job definitions it was made with: they type `enqueue`, `enqueueMany` and
 *   schedules. A bare `Client` is a client of any list (what a function taking any client wants).
 */
// why `any` as the default: a client of one list is no subtype of a client of another (enqueue
// takes a payload per type), so only `any` lets a bare `Client` parameter take every client.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export class Client<const J extends JobList = any> {
  /** The storage it writes to. */
  readonly storage: Storage;
  /** @internal the definitions by type, or null when made without them */
  readonly registry: JobRegistry | null;
  readonly #enqueuer: Enqueuer;
  readonly #bus: LocalBus;
  #batches: Batches<J> | undefined;

  constructor(opts: ClientOptions<J>) {
    this.storage = opts.storage;
    this.registry = opts.jobs === undefined ? null : new JobRegistry(opts.jobs);
    this.#enqueuer = new Enqueuer(opts.storage, this.registry, { ...DEFAULT_JOB_DEFAULTS, ...opts.defaults }, opts.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES);
    this.#bus = LocalBus.for(opts.storage);
  }

  /**
   * Enqueue one job. The payload is checked (plain JSON, size, the type's schema) before anything
   * is written. Pass `options.tx` to insert inside your own transaction, where the storage's
   * `capabilities.transactionalEnqueue` is true: the job exists once you commit.
   *
   * @param type - a type of the client's job list
   * @param payload - what that type takes: its schema's input
   * @param options - when and where it runs, and keys that make it unique
   * @returns the job written, or the one an idempotency or unique key matched (`created: false`)
   * @throws `ValidationError` (codes `UNKNOWN_JOB_TYPE`, `PAYLOAD_SCHEMA`, `INVALID_PAYLOAD`, `PAYLOAD_TOO_LARGE`, `INVALID_OPTION`)
   */
  async enqueue<T extends JobTypeName<J>>(type: T, payload: JobInput<J, T>, options: EnqueueItemOptions = {}): Promise<EnqueuedJob> {
    const [job] = await this.enqueueMany([{ type, payload, options } as EnqueueItem<J>]);
    return job as EnqueuedJob;
  }

  /**
   * Enqueue one job inside your synchronous SQLite transaction, written before it returns: for
   * better-sqlite3's `db.transaction(fn)`, where nothing can be awaited. Checked as `enqueue`
   * is, before anything is written, except that a schema which validates asynchronously is
   * refused. The job exists once your transaction commits; a throw that rolls it back leaves none.
   *
   * @example
   * ```ts
   * const placeOrder = db.transaction((orderId: number) => {
   *   db.prepare('INSERT INTO orders (id) VALUES (?)').run(orderId);
   *   client.enqueueSync('send-receipt', { orderId }, { tx: db });
   * });
   * ```
   *
   * @param type - a type of the client's job list
   * @param payload - what that type takes: its schema's input
   * @param options - as `enqueue`'s; `tx` is required: your better-sqlite3 `Database` (or
   *   node:sqlite `DatabaseSync`) on the storage's file, inside its open transaction
   * @returns the job written, or the one an idempotency or unique key matched (`created: false`)
   * @throws `ValidationError` (as `enqueue`; `INVALID_OPTION` for an asynchronous schema or a
   *   `tx` that is no open transaction on the storage's file), `NotSupportedError` on a storage
   *   that cannot write synchronously (PostgreSQL, MySQL, memory: use `enqueue`)
   */
  enqueueSync<T extends JobTypeName<J>>(type: T, payload: JobInput<J, T>, options: EnqueueItemOptions & { tx: unknown }): EnqueuedJob {
    const [job] = this.#enqueuer.enqueueManySync([{ type, payload, options } as EnqueueItem], 'enqueueSync');
    return job as EnqueuedJob;
  }

  /**
   * Enqueue many jobs in one transaction: all are written, or (on bad input) none. Every item is
   * validated first; items that give `tx` must all give the same one.
   *
   * @returns one job per item, in order
   */
  enqueueMany(items: readonly EnqueueItem<J>[]): Promise<EnqueuedJob[]> {
    return this.#enqueuer.enqueueMany(items as readonly EnqueueItem[]);
  }

  /**
   * Enqueue a workflow in one transaction: jobs named by `key`, each run only after the jobs its
   * `dependsOn` names (keys of the same call, or `{ jobId }` of stored jobs) all succeeded. The
   * graph is checked first (keys unique and known, no cycle; stored ids that exist) and every item
   * as `enqueue` checks it; nothing is written on bad input. See docs/workflows.md.
   *
   * @returns the jobs as written, by key (those with parents `waiting`)
   * @throws `ValidationError` (`INVALID_FLOW`, and `enqueue`'s codes)
   */
  async enqueueFlow(items: readonly FlowItem<J>[], options?: FlowOptions): Promise<Record<string, JobRow>> {
    return (await enqueueFlow(this.#enqueuer, items as readonly FlowItem[], options))!;
  }

  /** The jobs a job runs after and those that run after it (its workflow's edges), at most 100 of each. */
  jobDependencies(id: string): Promise<JobDependencies> {
    return this.storage.workflows.dependencies({ jobId: checkId(id), limit: 100 });
  }

  /** Batches: groups of jobs whose last one to end enqueues a callback job, once (docs/workflows.md). */
  get batches(): Batches<J> {
    return (this.#batches ??= new Batches<J>(this.#enqueuer));
  }

  /**
   * Add or change one schedule, by name. Its type must be one of the client's job list and its
   * payload one that type's schema accepts (checked before anything is written). A schedule
   * added here is never removed by {@link Client.syncSchedules} or a worker's `schedules`.
   *
   * @throws `ValidationError` (codes `INVALID_SCHEDULE`, `UNKNOWN_JOB_TYPE`, `PAYLOAD_SCHEMA`, `INVALID_OPTION`)
   */
  async upsertSchedule(input: ScheduleFor<J>): Promise<ScheduleRow> {
    return upsertSchedule(this.storage, await checkSchedule(this.registry, input));
  }

  /**
   * Make the schedules declared in code exactly `inputs`: add, change, and remove (by name) the
   * ones declared in code before, in one transaction. Declare them here or in a worker's
   * `schedules` option, not both (each sync removes what the other declared).
   *
   * @returns the schedules written and the names removed
   */
  async syncSchedules(inputs: readonly ScheduleFor<J>[]): Promise<{
    /** the schedules as written */
    schedules: ScheduleRow[];
    /** names of declared schedules removed */
    removed: string[];
  }> {
    const checked: ScheduleInput[] = [];
    for (const input of inputs) checked.push(await checkSchedule(this.registry, input));
    return syncSchedules(this.storage, checked);
  }

  /**
   * One job by id.
   *
   * @throws `JobNotFoundError` when there is none (pruned, or never existed)
   */
  async getJob(id: string): Promise<JobRow> {
    const job = await this.storage.jobs.get({ id: checkId(id) });
    if (!job) throw new JobNotFoundError(id);
    return job;
  }

  /** Jobs, newest first, filtered by `status`, `type`, `queue`; page with `beforeId` and `limit` (1–1000, default 50). */
  listJobs(query: Partial<JobQuery> = {}): Promise<JobRow[]> {
    const limit = query.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new ValidationError('INVALID_OPTION', 'limit must be 1-1000');
    return this.storage.jobs.list({ ...query, beforeId: query.beforeId === undefined ? undefined : checkId(query.beforeId), limit });
  }

  /** A job's history: one row per attempt, with its outcome, error and retry delay. */
  listAttempts(jobId: string): Promise<AttemptRow[]> {
    return this.storage.attempts.list({ jobId: checkId(jobId) });
  }

  /** How many jobs there are per queue, type and status, and how many of them are due. */
  countJobs(): Promise<JobCount[]> {
    return this.storage.queues.counts();
  }

  /** The workers registered, with their heartbeat, queues and types. */
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

  /** Each alert rule's state (firing or ok, since when, the value that moved it); a rule that never fired has none. */
  listAlerts(): Promise<AlertStateRow[]> {
    return this.storage.alerts.list();
  }

  /** Effects recorded by `ctx.once`, newest first, optionally of one job (default limit 100). */
  listEffects(params: { jobId?: string; limit?: number } = {}): Promise<EffectRow[]> {
    return this.storage.effects.list({ ...params, limit: params.limit ?? 100 });
  }

  /**
   * Make a failed, dead, cancelled or waiting job due now, with its attempt budget reset. The
   * job's history records it as done by `by` (default: `api` from this host).
   *
   * @throws `JobNotFoundError`, or `InvalidStateError` for a running or succeeded job
   */
  async retryNow(id: string, by: OperatorRef = API_OPERATOR): Promise<JobRow> {
    return retryJob(this.storage, id, by);
  }

  /**
   * Cancel a waiting or running job for good; a running handler's signal fires. The job's
   * history records it as done by `by` (default: `api` from this host).
   *
   * @throws `JobNotFoundError`, or `InvalidStateError` for a finished job
   */
  async cancel(id: string, by: OperatorRef = API_OPERATOR): Promise<JobRow> {
    return cancelJob(this.storage, id, by);
  }

  /**
   * Due jobs whose type no live worker has a handler for: they wait, they are never failed
   * for it. `aliveWithinMs` decides which workers count as live.
   */
  async unhandledJobs(aliveWithinMs = 60_000): Promise<UnhandledJobs[]> {
    const [due, workers, now] = await Promise.all([this.storage.queues.dueCounts(), this.storage.workers.list(), this.storage.now()]);
    return findUnhandled(due.counts, workers, now, aliveWithinMs).map((u) => ({ ...u, capped: !due.complete }));
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

/**
 * Make a client: the one way to enqueue. Give it the same `jobs` list as the worker, and
 * `enqueue`, `enqueueMany` and schedules are checked against it at compile time and at run time.
 *
 * @example
 * ```ts
 * const client = createClient({ storage, jobs: [sendEmail] });
 * await client.enqueue('send-email', { to: 'a@example.com' }, { delayMs: 60_000 });
 * ```
 */
export function createClient<const J extends JobList = JobList>(opts: ClientOptions<J>): Client<J> {
  return new Client(opts);
}
