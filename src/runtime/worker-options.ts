/**
 * What a Worker is given (its options, with their defaults) and what its stop() and drain()
 * report. The Worker itself is in worker.ts.
 */
import type { QueueFlow } from '../core/index.js';
import type { Storage } from '../core/storage.js';
import type { AlertOptions } from './alert-evaluator.js';
import type { Logger } from './env.js';
import type { JobList, ScheduleFor } from './job-types.js';
import type { WorkerObserver } from './observer.js';
import type { RetentionOptions } from './sweeper.js';

/**
 * What a {@link Worker} is given; every field but `storage` and `jobs` has a default.
 *
 * @typeParam J - the list of job definitions, inferred from `jobs`: it types `schedules`
 */
export interface WorkerOptions<J extends JobList = JobList> {
  /** where jobs are claimed from, e.g. from `openStorage(url)` */
  storage: Storage;
  /** the job definitions this worker runs (from `defineJob`); other types stay queued for a worker that has them */
  jobs: J;
  /** jobs run at once (default 10) */
  concurrency?: number;
  /**
   * claimed-but-not-started jobs kept locally. Default: sized by time, about 25 ms of work at
   * the observed run time (from `concurrency` for slow jobs up to 500 for very short ones)
   */
  bufferSize?: number;
  /** only these queues (default: all) */
  queues?: readonly string[] | null;
  /**
   * limits per queue, kept by every claim across the cluster over the queue's jobs of every type,
   * e.g. `{ emails: { maxRunning: 5, rate: { limit: 100, periodMs: 1_000 } } }`; a job whose type
   * has limits too must fit both. Give every worker that takes from the queue the same limits
   */
  queueLimits?: Readonly<Record<string, QueueFlow>>;
  /** lease length; renewed every third of it (default 30 s) */
  leaseMs?: number;
  /** how often an idle worker looks for due jobs (default 1 s); enqueues in this process wake it at once */
  pollIntervalMs?: number;
  /** after a handler's signal fires, how long before its slot is taken back (default 5 s) */
  abortGraceMs?: number;
  /** `ctx.progress` writes at most once per this many ms; reports in between coalesce, the last one wins (default 1 s) */
  progressIntervalMs?: number;
  /** default deadline for stop() (default 25 s) */
  shutdownDeadlineMs?: number;
  /** run the sweeper in this worker (default true) */
  sweeper?: boolean;
  /** how often the sweeper recovers expired leases and applies retention, in ms (default half of `leaseMs`, at most 30 s) */
  sweepIntervalMs?: number;
  /** retention of finished jobs, applied by the sweeper; false keeps everything */
  retention?: RetentionOptions | false;
  /** where the worker logs (default: a pino logger at `info`) */
  logger?: Logger;
  /** source of randomness for jitter, in [0, 1) (default `Math.random`; tests pass a seeded one) */
  random?: () => number;
  /** this worker's id, recorded on the jobs it claims (default: hostname, pid and a random suffix) */
  workerId?: string;
  /** run the scheduler in this worker (default true); `drain()` fires due schedules first */
  scheduler?: boolean;
  /**
   * schedules declared in code, synced on start (added, changed, removed by name); each names a
   * type of `jobs` with a payload that type takes, checked at compile time and again at start
   */
  schedules?: readonly ScheduleFor<J>[];
  /** how often the scheduler looks for due schedules (default 1 s, jittered) */
  schedulerIntervalMs?: number;
  /**
   * a consumer span per attempt through @opentelemetry/api, linked to the trace that enqueued
   * the job (default true; nothing is recorded unless the app registers a tracer provider)
   */
  tracing?: boolean;
  /** instruments told about claims and attempts, e.g. `metrics.observer` from leasehold's metrics */
  observers?: readonly WorkerObserver[];
  /** alert rules, evaluated by one worker of the cluster at a time; webhook deliveries run as jobs (see alert-evaluator.ts) */
  alerts?: AlertOptions;
}

/** What {@link Worker.stop} reports: the jobs it handed back for another worker. */
export interface StopReport {
  /** jobs still running at the deadline: aborted and handed back due */
  handedBack: string[];
  /** buffered jobs that never started, handed back */
  unstarted: string[];
}

/** What {@link Worker.drain} reports once no due job is left (or its deadline passed). */
export interface DrainReport {
  /** attempts run */
  processed: number;
  /** attempts by outcome, e.g. `{ completed: 3, retried: 1 }` */
  outcomes: Record<string, number>;
  /** true when the deadline came before the queues were empty */
  timedOut: boolean;
}
