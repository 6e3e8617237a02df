/**
 * The worker pool: claims due jobs in batches into a small local buffer, runs up to
 * `concurrency` of them at once (worker-slots.ts), keeps their leases alive, and shuts down
 * against a deadline. It composes the heartbeater, the completer and the sweeper; each does
 * one thing. Every lease it holds is one object from claim to the attempt's end
 * (worker-leases.ts), so a renewal's answer or a cancel reaches the job wherever it is.
 */
import { AbortReason as Reason, type QueueFlow, type ScheduleInput, type TypeFlow, ValidationError } from '../core/index.js';
import type { ClaimedJob, Storage } from '../core/storage.js';
import { Completer } from './completer.js';
import { settlesBy } from './deadline.js';
import type { Logger } from './env.js';
import { LocalBus, defaultLogger, newWorkerId } from './env.js';
import { Heartbeater } from './heartbeater.js';
import { type JobLease, LeaseBook } from './worker-leases.js';
import { ClaimBackoff, claimBudget, claimWaitMs, yieldTurn } from './worker-claim.js';
import { sweeperSettings, workerSettings } from './worker-settings.js';
import { abortAtDeadline, awaitOutcomes, handBack, waitWhile } from './worker-shutdown.js';
import { Slots } from './worker-slots.js';
import type { JobRegistry } from './job-definition.js';
import type { JobList } from './job-types.js';
import { checkSchedule } from './client-input.js';
import { Sweeper } from './sweeper.js';
import { Wakeup } from './wakeup.js';
import type { DrainReport, StopReport, WorkerOptions } from './worker-options.js';
import { Scheduler } from './scheduler.js';
import { type Observers, combineObservers } from './observer.js';
import { tracingObserver } from './tracing.js';
import { AlertEvaluator } from './alert-evaluator.js';
import { withAlertJobs } from './alert-webhook.js';
import { VERSION } from './version.js';

export type { DrainReport, StopReport, WorkerOptions } from './worker-options.js';

/**
 * Runs the handlers of its `jobs` against a storage: claims due jobs, keeps their leases alive,
 * retries failures by their policy, and (by default) runs the sweeper and the scheduler too.
 *
 * @typeParam J - the job definitions it was made with (inferred from `jobs`): they type its
 *   `schedules` option, as a client's are typed.
 *
 * @example
 * ```ts
 * const worker = new Worker({ storage: await openStorage('sqlite:app.db'), jobs: [sendEmail] });
 * await worker.start();
 * process.on('SIGTERM', () => void worker.stop());
 * ```
 */
export class Worker<const J extends JobList = JobList> {
  /** this worker's id, recorded on the jobs it claims (the `workerId` option or a generated one) */
  readonly id: string;
  /** @internal the job definitions it runs, by type (the `jobs` option plus alert webhook jobs) */
  readonly registry: JobRegistry;
  /** its logger, with `workerId` on every line */
  readonly log: Logger;
  readonly #storage: Storage;
  readonly #concurrency: number;
  /** the bufferSize option, or null for the automatic, time-based size */
  readonly #fixedBuffer: number | null;
  /** whether per-job info lines are wanted (skips building them when not) */
  readonly #logInfo: boolean;
  readonly #queues: readonly string[] | null;
  readonly #leaseMs: number;
  readonly #pollMs: number;
  readonly #opts: Omit<WorkerOptions, 'schedules'>;
  /** the `schedules` option (a typed schedule is a ScheduleInput TypeScript cannot prove for a generic list) */
  readonly #schedules: readonly ScheduleInput[] | undefined;
  readonly #random: () => number;
  readonly #completer: Completer;
  /** every lease held, from claim until its attempt is over; the local buffer of jobs not started */
  readonly #leases: LeaseBook;
  readonly #heartbeater: Heartbeater;
  readonly #sweeper: Sweeper | null;
  readonly #scheduler: Scheduler | null;
  readonly #alerts: AlertEvaluator | null;
  readonly #slots: Slots;
  readonly #observer: Observers | undefined;
  readonly #types: string[];
  /** the claim enforces these types' and queues' limits cluster-wide */
  readonly #flow: Record<string, TypeFlow> | undefined;
  readonly #queueFlow: Record<string, QueueFlow> | undefined;
  readonly #wake = new Wakeup();
  #state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  #loop: Promise<void> | null = null;
  #exitWhenIdle = false;
  #unsubscribe: (() => Promise<void>) | undefined;
  readonly #onEnqueued = () => this.#wake.wake();
  readonly #onCancelled = (e: Event) => this.#leases.get((e as CustomEvent<string>).detail)?.abort(new Reason('CANCELLED', 'job was cancelled by an operator'));

  constructor(options: WorkerOptions<J>) {
    // the options but the typed schedules: a worker of one list stays assignable to a `Worker` of any
    const { schedules, ...opts } = options;
    this.#opts = opts;
    this.#schedules = schedules as readonly ScheduleInput[] | undefined;
    this.#storage = opts.storage;
    this.registry = withAlertJobs(opts.jobs, opts.alerts);
    if (this.registry.size === 0) throw new ValidationError('INVALID_OPTION', 'a worker needs at least one job definition');
    ({ concurrency: this.#concurrency, fixedBuffer: this.#fixedBuffer, queues: this.#queues, queueFlow: this.#queueFlow, leaseMs: this.#leaseMs, pollMs: this.#pollMs, random: this.#random } = workerSettings(opts));
    this.id = opts.workerId ?? newWorkerId();
    this.#types = this.registry.types;
    this.#flow = this.registry.flow;
    this.log = (opts.logger ?? defaultLogger()).child({ workerId: this.id });
    this.#logInfo = this.log.isLevelEnabled('info');
    this.#completer = new Completer(this.#storage, this.log);
    const observers = [...(opts.tracing === false ? [] : [tracingObserver()]), ...(opts.observers ?? [])];
    this.#observer = combineObservers(observers, (e) => this.log.warn({ event: 'observer.failed', err: (e as Error).message }, 'a metrics or tracing observer threw; ignored'));
    this.#leases = new LeaseBook(this.log, this.#observer);
    this.#heartbeater = new Heartbeater(this.#storage, this.#leaseMs, () => this.#leases.renewable(), this.log, () => this.#storage.workers.heartbeat({ id: this.id }));
    this.#sweeper = opts.sweeper === false ? null : new Sweeper(this.#storage, this.registry, this.log, this.#random, sweeperSettings(opts, this.#leaseMs), this.#observer);
    this.#scheduler =
      opts.scheduler === false
        ? null
        : new Scheduler({ storage: this.#storage, registry: this.registry, ...(this.#schedules ? { schedules: this.#schedules } : {}), intervalMs: opts.schedulerIntervalMs ?? 1_000, logger: this.log, random: this.#random });
    this.#alerts = opts.alerts ? new AlertEvaluator({ ...opts.alerts, queue: opts.alerts.queue ?? this.#queues?.[0], storage: this.#storage, logger: this.log, random: this.#random, owner: this.id }) : null;
    this.#slots = new Slots({
      storage: this.#storage, completer: this.#completer, leases: this.#leases, registry: this.registry, heartbeater: this.#heartbeater,
      log: this.log, random: this.#random, concurrency: this.#concurrency, leaseMs: this.#leaseMs, abortGraceMs: opts.abortGraceMs ?? 5_000,
      progressIntervalMs: opts.progressIntervalMs ?? 1_000, wake: this.#wake, accepting: () => this.#state === 'running', observer: this.#observer,
    });
  }

  /** `new`, `running`, `stopping` or `stopped` */
  get state(): string {
    return this.#state;
  }

  /** Jobs held by this worker right now (running + buffered). */
  get inFlight(): number {
    return this.#slots.running.size + this.#leases.buffered;
  }

  /** Starts claiming (and the sweeper and scheduler); syncs the `schedules` option first. */
  async start(): Promise<void> {
    if (this.#state !== 'new') throw new Error(`worker ${this.id} was already started`);
    // Declared schedules first: a bad one throws here, before anything is registered or started.
    if (this.#scheduler) for (const s of this.#schedules ?? []) await checkSchedule(this.registry, s);
    await this.#scheduler?.sync();
    this.#state = 'running';
    const os = await import('node:os');
    await this.#storage.workers.register({ id: this.id, host: os.hostname(), pid: process.pid, version: VERSION, queues: this.#queues, types: this.registry.types });
    const bus = LocalBus.for(this.#storage);
    bus.addEventListener('enqueued', this.#onEnqueued);
    bus.addEventListener('cancelled', this.#onCancelled);
    if (this.#storage.subscribe) {
      // Pushed wake-ups (LISTEN/NOTIFY) from other processes; polling stays the backstop.
      this.#unsubscribe = await this.#storage.subscribe({ onWake: () => this.#wake.wake() });
    }
    this.#heartbeater.start();
    this.#sweeper?.start();
    await this.#scheduler?.start();
    this.#alerts?.start();
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
    await this.#alerts?.tick();
    await this.start();
    const timer = setTimeout(() => this.#wake.wake(), opts.maxMs);
    const deadline = new Promise<'deadline'>((r) => setTimeout(() => r('deadline'), opts.maxMs).unref());
    const which = await Promise.race([this.#loop?.then(() => 'idle' as const), deadline]);
    clearTimeout(timer);
    await this.stop({ deadlineMs: Math.max(0, until - Date.now()) });
    const outcomes = this.#slots.outcomes;
    const processed = Object.values(outcomes).reduce((a, b) => a + b, 0);
    return { processed, outcomes: { ...outcomes }, timedOut: which === 'deadline' };
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
    // nothing starts after stop(): the buffered jobs go back at once, written through the
    // completer and waited for with the other outcomes below
    const unstarted = this.#leases.takeBuffer();
    if (unstarted.length > 0) this.#observer?.handedBack?.(unstarted.map((l) => l.job));
    const handBacks = Promise.all(unstarted.map((lease) => this.#handBack(lease)));
    const bus = LocalBus.for(this.#storage);
    bus.removeEventListener('enqueued', this.#onEnqueued);
    // a scheduler tick or an UNLISTEN that does not answer is not waited for past the deadline
    await settlesBy(Promise.all([this.#scheduler?.stop(), this.#alerts?.stop(), this.#unsubscribe?.().catch(() => {})]), until);
    this.#wake.wake();
    // a claim still out at the deadline is not waited for: what it brings back is handed back
    await settlesBy(this.#loop ?? Promise.resolve(), until);
    const { running } = this.#slots;
    if (running.size > 0) {
      this.log.info({ event: 'worker.draining', running: [...running.keys()], deadlineMs }, 'stopping: waiting for running jobs');
    }
    await waitWhile(this.#wake, () => running.size > 0, until);
    // only handlers still running are aborted (a job whose finish is being written just lands);
    // they stop, their leases still held and renewed, before they are handed back. One that
    // ignored an earlier abort (a timeout) is waited for no longer: its lease is left to lapse
    const grace = abortAtDeadline([...running.values()].filter((a) => a.holdsSlot), this.log, this.#opts.abortGraceMs);
    for (const a of running.values()) if (!a.holdsSlot) a.leaveToLapse();
    // the outcomes still being written get a bounded allowance (the completer is asked once the running jobs landed)
    const writesUntil = await awaitOutcomes(this.#wake, running, () => Promise.all([handBacks, this.#completer.idle()]), grace, this.log);
    bus.removeEventListener('cancelled', this.#onCancelled);
    this.#heartbeater.stop();
    this.#slots.clock.stop();
    // the caller closes the storage next: within the same allowance, the sweep under way ends and
    // the worker row goes (a row left behind is removed by a sweeper once silent)
    let swept = this.#sweeper === null;
    const sweep = this.#sweeper?.stop().then(() => (swept = true));
    await settlesBy(Promise.all([sweep, this.#storage.workers.remove({ id: this.id }).catch(() => {})]), writesUntil);
    if (!swept) this.log.warn({ event: 'worker.sweep_unfinished' }, 'stopping with a sweep still running: its next statement will fail on the closed storage');
    this.#state = 'stopped';
    const { handed_back: handedBack, abandoned } = this.#slots.ended;
    this.#stopReport = { handedBack, unstarted: [...unstarted.map((l) => l.job.id), ...this.#lateUnstarted] };
    this.log.info({ event: 'worker.stopped', handedBack, unstarted: this.#stopReport.unstarted, abandoned }, 'worker stopped');
  }

  /** Give a claimed job back (due now, attempt not counted); its lease is renewed until that is written. */
  async #handBack(lease: JobLease): Promise<void> {
    await handBack(this.#completer, lease.job, this.#random);
    this.#leases.release(lease);
  }

  async #claimLoop(): Promise<void> {
    const backoff = new ClaimBackoff(this.log);
    while (this.#state === 'running') {
      let limit = this.#claimLimit();
      let full = false;
      if (limit > 0) {
        // one turn of the event loop per claim: with a synchronous database (SQLite) and handlers
        // that return at once, claims and jobs would chain on microtasks while jobs are due,
        // serving no timer, signal or socket meanwhile
        await yieldTurn();
        limit = this.#state === 'running' ? this.#claimLimit() : 0;
      }
      if (limit > 0) {
        // the lease is surely ours until the lease length after the claim was sent
        const sentAt = performance.now();
        try {
          const jobs = await this.#storage.leases.claim({ workerId: this.id, types: this.#types, queues: this.#queues, limit, leaseMs: this.#leaseMs, flow: this.#flow, queueFlow: this.#queueFlow });
          if (this.#state !== 'running') {
            // stop() began while this claim was out (it may have stopped waiting for it): none
            // of these start; they go straight back, due now, the attempt not counted
            for (const job of jobs) this.#lateUnstarted.push(job.id);
            if (jobs.length > 0) this.#observer?.handedBack?.(jobs);
            await Promise.all(jobs.map((job) => handBack(this.#completer, job, this.#random)));
            return;
          }
          backoff.succeeded();
          this.#observer?.claimed?.(jobs.length);
          for (const job of jobs) this.#accept(job, sentAt + this.#leaseMs);
          this.#slots.dispatch();
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
    const { avgRunMs, running, executing } = this.#slots;
    return claimBudget({ concurrency: this.#concurrency, fixedBuffer: this.#fixedBuffer, avgRunMs, running: running.size, executing, buffered: this.#leases.buffered });
  }

  #accept(job: ClaimedJob, expiresAt: number): void {
    if (this.#logInfo) this.log.info({ event: 'job.claimed', jobId: job.id, type: job.type, attempt: job.attempts, queue: job.queue }, 'job claimed');
    this.#leases.accept(job, expiresAt);
  }
}
