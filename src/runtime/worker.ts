/**
 * The worker pool: claims due jobs in batches into a small local buffer, runs up to
 * `concurrency` of them at once, keeps their leases alive, and shuts down against a deadline.
 * It composes the heartbeater, the completer and the sweeper; each does one thing.
 */
import { AbortReason as Reason, ValidationError, nextAvgRunMs } from '../core/index.js';
import type { ClaimedJob, Storage } from '../core/storage.js';
import { Attempt, type AttemptDeps } from './attempt.js';
import { AttemptClock } from './attempt-clock.js';
import { Completer } from './completer.js';
import { EffectBatcher } from './effect-batcher.js';
import { settlesBy } from './deadline.js';
import type { Logger } from './env.js';
import { LocalBus, defaultLogger, newWorkerId } from './env.js';
import type { HeldLease } from './heartbeater.js';
import { Heartbeater } from './heartbeater.js';
import { bufferedLease, type Buffered } from './worker-buffer.js';
import { ClaimBackoff, claimBudget, claimWaitMs, yieldTurn } from './worker-claim.js';
import { sweeperSettings, workerSettings } from './worker-settings.js';
import { abortAtDeadline, awaitOutcomes, handBack, waitWhile } from './worker-shutdown.js';
import { JobRegistry } from './job-definition.js';
import { Sweeper } from './sweeper.js';
import { Wakeup } from './wakeup.js';
import type { DrainReport, StopReport, WorkerOptions } from './worker-options.js';
import type { Lock } from './locks.js';
import { Scheduler } from './scheduler.js';
import { TypeCaps } from './type-cap.js';
import { VERSION } from './version.js';

export type { DrainReport, StopReport, WorkerOptions } from './worker-options.js';

export class Worker {
  readonly id: string;
  readonly registry: JobRegistry;
  readonly log: Logger;
  readonly #storage: Storage;
  readonly #concurrency: number;
  /** the bufferSize option, or null for the automatic, time-based size */
  readonly #fixedBuffer: number | null;
  /** moving average of handler run time in ms (null until a job ran) */
  #avgRunMs: number | null = null;
  /** jobs whose handler holds a concurrency slot (their finish may still be in flight after) */
  #executing = 0;
  /** whether per-job info lines are wanted (skips building them when not) */
  readonly #logInfo: boolean;
  readonly #queues: readonly string[] | null;
  readonly #leaseMs: number;
  readonly #pollMs: number;
  readonly #opts: WorkerOptions;
  readonly #random: () => number;
  readonly #completer: Completer;
  /** the time limits of the running attempts: one timer for all */
  readonly #clock = new AttemptClock(() => this.#running.values());
  readonly #heartbeater: Heartbeater;
  readonly #sweeper: Sweeper | null;
  readonly #scheduler: Scheduler | null;
  readonly #caps: TypeCaps;
  /** capped jobs waiting for a slot of their type's semaphore: they hold a concurrency slot */
  #admitting = 0;
  readonly #wake = new Wakeup();
  readonly #buffer: Buffered[] = [];
  readonly #running = new Map<string, Attempt>();
  #state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  #loop: Promise<void> | null = null;
  #exitWhenIdle = false;
  #unsubscribe: (() => Promise<void>) | undefined;
  #outcomes: Record<string, number> = {};
  readonly #onEnqueued = () => this.#wake.wake();
  readonly #onCancelled = (e: Event) => this.#running.get((e as CustomEvent<string>).detail)?.abort(new Reason('CANCELLED', 'job was cancelled by an operator'));

  constructor(opts: WorkerOptions) {
    this.#opts = opts;
    this.#storage = opts.storage;
    this.registry = opts.jobs instanceof JobRegistry ? opts.jobs : new JobRegistry(opts.jobs);
    if (this.registry.size === 0) throw new ValidationError('INVALID_OPTION', 'a worker needs at least one job definition');
    ({ concurrency: this.#concurrency, fixedBuffer: this.#fixedBuffer, queues: this.#queues, leaseMs: this.#leaseMs, pollMs: this.#pollMs, random: this.#random } = workerSettings(opts));
    this.id = opts.workerId ?? newWorkerId();
    this.log = (opts.logger ?? defaultLogger()).child({ workerId: this.id });
    this.#logInfo = this.log.isLevelEnabled('info');
    this.#completer = new Completer(this.#storage, this.log);
    this.#heartbeater = new Heartbeater(this.#storage, this.#leaseMs, () => this.#held(), this.log, () => this.#storage.heartbeatWorker(this.id));
    this.#sweeper = opts.sweeper === false ? null : new Sweeper(this.#storage, this.registry, this.log, this.#random, sweeperSettings(opts, this.#leaseMs));
    this.#scheduler =
      opts.scheduler === false
        ? null
        : new Scheduler({ storage: this.#storage, registry: this.registry, ...(opts.schedules ? { schedules: opts.schedules } : {}), intervalMs: opts.schedulerIntervalMs ?? 1_000, logger: this.log, random: this.#random });
    this.#caps = new TypeCaps(this.#storage, this.id, this.#leaseMs, (p) => this.#completer.finish(p), this.log, this.#random);
  }

  get state(): string {
    return this.#state;
  }

  /** Jobs held by this worker right now (running + buffered). */
  get inFlight(): number {
    return this.#running.size + this.#buffer.length + this.#admitting;
  }

  async start(): Promise<void> {
    if (this.#state !== 'new') throw new Error(`worker ${this.id} was already started`);
    // Declared schedules first: a bad one throws here, before anything is registered or started.
    await this.#scheduler?.sync();
    this.#state = 'running';
    const os = await import('node:os');
    await this.#storage.registerWorker({ id: this.id, host: os.hostname(), pid: process.pid, version: VERSION, queues: this.#queues, types: this.registry.types });
    const bus = LocalBus.for(this.#storage);
    bus.addEventListener('enqueued', this.#onEnqueued);
    bus.addEventListener('cancelled', this.#onCancelled);
    if (this.#storage.subscribe) {
      // Pushed wake-ups (LISTEN/NOTIFY) from other processes; polling stays the backstop.
      this.#unsubscribe = await this.#storage.subscribe(() => this.#wake.wake());
    }
    this.#heartbeater.start();
    this.#sweeper?.start();
    await this.#scheduler?.start();
    this.log.info({ event: 'worker.started', concurrency: this.#concurrency, queues: this.#queues, types: this.registry.types, leaseMs: this.#leaseMs }, 'worker started');
    this.#loop = this.#claimLoop();
  }

  /**
   * Cron mode: rescue expired leases, then run due jobs until none are left or `maxMs`
   * passes, then stop (with whatever time is left as the shutdown deadline).
   */
  async drain(opts: { maxMs: number }): Promise<DrainReport> {
    const until = Date.now() + opts.maxMs;
    this.#exitWhenIdle = true;
    await this.#scheduler?.sync();
    await this.#scheduler?.tick();
    await this.#sweeper?.sweep();
    await this.start();
    const timer = setTimeout(() => this.#wake.wake(), opts.maxMs);
    const deadline = new Promise<'deadline'>((r) => setTimeout(() => r('deadline'), opts.maxMs).unref());
    const which = await Promise.race([this.#loop?.then(() => 'idle' as const), deadline]);
    clearTimeout(timer);
    await this.stop({ deadlineMs: Math.max(0, until - Date.now()) });
    const processed = Object.values(this.#outcomes).reduce((a, b) => a + b, 0);
    return { processed, outcomes: { ...this.#outcomes }, timedOut: which === 'deadline' };
  }

  /**
   * Stop claiming, let running jobs finish until the deadline, then abort the rest and hand
   * their leases back (due now, the attempt not counted). Safe to call more than once.
   */
  async stop(opts: { deadlineMs?: number } = {}): Promise<StopReport> {
    if (this.#state === 'stopped' || this.#state === 'new') return { handedBack: [], unstarted: [] };
    if (this.#state === 'stopping') {
      await this.#stopped;
      return this.#stopReport;
    }
    this.#state = 'stopping';
    const deadlineMs = opts.deadlineMs ?? this.#opts.shutdownDeadlineMs ?? 25_000;
    this.#stopped = this.#shutdown(deadlineMs);
    await this.#stopped;
    return this.#stopReport;
  }

  #stopped: Promise<void> = Promise.resolve();
  /** jobs a claim brought back after stop() began: handed back at once, never started */
  readonly #lateUnstarted: string[] = [];
  #stopReport: StopReport = { handedBack: [], unstarted: [] };

  async #shutdown(deadlineMs: number): Promise<void> {
    const until = Date.now() + deadlineMs;
    const bus = LocalBus.for(this.#storage);
    bus.removeEventListener('enqueued', this.#onEnqueued);
    // a scheduler tick or an UNLISTEN that does not answer is not waited for past the deadline
    await settlesBy(Promise.all([this.#scheduler?.stop(), this.#unsubscribe?.().catch(() => {})]), until);
    this.#wake.wake();
    // a claim still out at the deadline is not waited for: what it brings back is handed back
    await settlesBy(this.#loop ?? Promise.resolve(), until);
    const unstarted = this.#buffer.splice(0).map((b) => b.job);
    // written through the completer, waited for with the other outcomes below
    const handBacks = Promise.all(unstarted.map((job) => this.#handBack(job)));
    if (this.#running.size > 0) {
      this.log.info({ event: 'worker.draining', running: [...this.#running.keys()], deadlineMs }, 'stopping: waiting for running jobs');
    }
    await waitWhile(this.#wake, () => this.#running.size > 0 || this.#admitting > 0, until);
    // only handlers still running are aborted; a job whose finish is being written just lands
    const still = [...this.#running.values()].filter((a) => a.holdsSlot);
    const { handedBack, grace } = abortAtDeadline(still, this.log, this.#opts.abortGraceMs);
    // the outcomes still being written get a bounded allowance (the completer is asked once the running jobs landed)
    const writesUntil = await awaitOutcomes(this.#wake, this.#running, () => Promise.all([handBacks, this.#completer.idle()]), grace, this.log);
    bus.removeEventListener('cancelled', this.#onCancelled);
    this.#heartbeater.stop();
    this.#clock.stop();
    this.#sweeper?.stop();
    // within the same allowance (a worker row left behind is removed by a sweeper once silent)
    await settlesBy(this.#storage.removeWorker(this.id).catch(() => {}), writesUntil);
    this.#state = 'stopped';
    this.#stopReport = { handedBack, unstarted: [...unstarted.map((j) => j.id), ...this.#lateUnstarted] };
    this.log.info({ event: 'worker.stopped', handedBack, unstarted: this.#stopReport.unstarted }, 'worker stopped');
  }

  #handBack(job: ClaimedJob): Promise<void> {
    return handBack(this.#completer, job, this.#random);
  }

  *#held(): Iterable<HeldLease> {
    yield* this.#buffer;
    yield* this.#running.values();
  }

  async #claimLoop(): Promise<void> {
    const backoff = new ClaimBackoff(this.log);
    while (this.#state === 'running') {
      let limit = this.#claimLimit();
      let full = false;
      if (limit > 0) {
        // one turn of the event loop per claim: with a synchronous database (SQLite) and
        // handlers that return at once, claims and jobs chained on microtasks for as long as
        // jobs were due, no timer, signal or socket was served meanwhile, and each finish write
        // took only the 30 outcomes that arrived while the previous one settled
        await yieldTurn();
        limit = this.#state === 'running' ? this.#claimLimit() : 0;
      }
      if (limit > 0) {
        const sentAt = Date.now();
        try {
          const jobs = await this.#storage.claimJobs({ workerId: this.id, types: this.registry.types, queues: this.#queues, limit, leaseMs: this.#leaseMs });
          if (this.#state !== 'running') {
            // stop() began while this claim was out (it may have stopped waiting for it): none
            // of these start; they go straight back, due now, the attempt not counted
            for (const job of jobs) this.#lateUnstarted.push(job.id);
            await Promise.all(jobs.map((job) => this.#handBack(job)));
            return;
          }
          backoff.succeeded();
          for (const job of jobs) this.#accept(job, sentAt + this.#leaseMs);
          this.#dispatch();
          full = jobs.length === limit;
          if (jobs.length === 0 && this.#exitWhenIdle && this.inFlight === 0) return;
        } catch (e) {
          await this.#wake.wait(backoff.failed(e));
          continue;
        }
      }
      if (full && this.#claimLimit() > 0) continue;
      const wait = claimWaitMs(limit > 0 && !full, this.#pollMs, this.#random);
      await this.#wake.wait(this.#exitWhenIdle && this.inFlight === 0 ? 0 : wait);
    }
  }

  /** How many jobs to claim now (0: not yet): see worker-claim.ts. */
  #claimLimit(): number {
    return claimBudget({
      concurrency: this.#concurrency, fixedBuffer: this.#fixedBuffer, avgRunMs: this.#avgRunMs,
      running: this.#running.size, executing: this.#executing, admitting: this.#admitting, buffered: this.#buffer.length,
    });
  }

  #accept(job: ClaimedJob, expiresAt: number): void {
    if (this.#logInfo) this.log.info({ event: 'job.claimed', jobId: job.id, type: job.type, attempt: job.attempts, queue: job.queue }, 'job claimed');
    this.#buffer.push(bufferedLease(job, expiresAt, this.#buffer, this.log));
  }

  #dispatch(): void {
    while (this.#executing + this.#admitting < this.#concurrency && this.#buffer.length > 0 && this.#state !== 'stopped') {
      const entry = this.#buffer.shift() as Buffered;
      const def = this.registry.get(entry.job.type);
      if (!def) continue; // cannot happen: we only claim registered types
      const cap = def.globalConcurrency;
      if (cap === undefined) {
        this.#launch(entry, def, null);
        continue;
      }
      // over its type's cluster-wide cap the job goes back to the queue (attempt not counted)
      this.#admitting++;
      void this.#caps.admit(entry.job, cap).then((lock) => {
        this.#admitting--;
        if (lock && this.#state === 'running') this.#launch(entry, def, lock);
        else if (lock) void this.#caps.keep(lock, () => {})().then(() => this.#handBack(entry.job));
        this.#wake.wake();
        this.#dispatch();
      });
    }
  }

  /** What every attempt of this worker shares (made once: per job it was a closure apiece). */
  #attemptDeps: AttemptDeps | undefined;
  /** the type-cap slots of running capped jobs: given back when the attempt ends */
  readonly #capSlots = new Map<Attempt, () => Promise<void>>();

  #launch(entry: Buffered, def: NonNullable<ReturnType<JobRegistry['get']>>, lock: Lock | null): void {
    const attempt = new Attempt(entry.job, def, (this.#attemptDeps ??= {
      storage: this.#storage,
      effects: new EffectBatcher(this.#storage),
      completer: this.#completer,
      clock: this.#clock,
      renew: async (a) => !(await this.#heartbeater.beat([a])).has(a.job.id),
      log: this.log,
      random: this.#random,
      abortGraceMs: this.#opts.abortGraceMs ?? 5_000,
      slotFreed: (a) => this.#slotFreed(performance.now() - a.launchedAt),
      ended: (a, outcome) => this.#done(a, outcome),
    }));
    attempt.expiresAt = entry.expiresAt;
    this.#executing++;
    this.#running.set(entry.job.id, attempt);
    if (lock) this.#capSlots.set(attempt, this.#caps.keep(lock, () => attempt.abort(new Reason('LEASE_LOST', `slot of the ${entry.job.type} concurrency cap lost`))));
    attempt.start();
  }

  /**
   * The handler is done with its slot: the next job may start while this one's finish is
   * still being written (its lease stays held and heartbeated until then).
   */
  #slotFreed(runMs: number): void {
    this.#executing--;
    this.#avgRunMs = nextAvgRunMs(this.#avgRunMs, runMs);
    this.#dispatch();
    this.#wake.wake();
  }

  #done(attempt: Attempt, outcome: string): void {
    const release = this.#capSlots.get(attempt);
    if (release) {
      this.#capSlots.delete(attempt);
      void release();
    }
    this.#running.delete(attempt.job.id);
    this.#outcomes[outcome] = (this.#outcomes[outcome] ?? 0) + 1;
    this.#dispatch();
    this.#wake.wake();
  }
}
