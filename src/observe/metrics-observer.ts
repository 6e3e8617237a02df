/**
 * The in-process metrics and the WorkerObserver that feeds them: attempts, their durations and
 * waits, claims, leases lost, rescued and handed back. An attempt costs a few comparisons and
 * number bumps (cells.ts): the cells of a job's type and queue are found once per attempt, and
 * they are what the worker tells when the attempt ends.
 */
import { Histogram } from 'prom-client';
import type { Registry } from 'prom-client';
import type { ClaimedJob } from '../core/storage.js';
import type { AttemptEnd, AttemptObservation, WorkerObserver } from '../runtime/observer.js';
import type { CountCell, ObserveCell } from './cells.js';
import { CellCounter, CellHistogram } from './cells.js';

type Instruments = InProcessMetrics;

/** The cells one attempt of a (type, queue) touches; it is also what the attempt's end is told to. */
class JobCells implements AttemptObservation {
  readonly wait: ObserveCell;
  readonly #outcomes = new Map<string, { attempts: CountCell; duration: ObserveCell }>();

  constructor(
    private readonly m: Instruments,
    readonly type: string,
    readonly queue: string,
  ) {
    this.wait = m.wait.cell(queue);
  }

  ended({ outcome, durationMs }: AttemptEnd): void {
    let c = this.#outcomes.get(outcome);
    if (!c) this.#outcomes.set(outcome, (c = { attempts: this.m.attempts.cell(this.type, this.queue, outcome), duration: this.m.duration.cell(this.type, outcome) }));
    c.attempts.n++;
    c.duration.observe(durationMs / 1000);
    if (outcome === 'lost') this.m.leasesLost.cell(this.type).n++;
    else if (outcome === 'handed_back') this.m.handedBack.cell(this.type).n++;
  }
}

export class InProcessMetrics {
  readonly attempts: CellCounter<'type' | 'queue' | 'outcome'>;
  readonly duration: CellHistogram<'type' | 'outcome'>;
  readonly wait: CellHistogram<'queue'>;
  readonly claimBatch: Histogram;
  readonly leasesLost: CellCounter<'type'>;
  readonly rescued: CellCounter<'type'>;
  readonly handedBack: CellCounter<'type'>;
  readonly observer: WorkerObserver;
  /** by type, then queue */
  readonly #jobs = new Map<string, Map<string, JobCells>>();
  #last: JobCells | undefined;

  constructor(registry: Registry) {
    this.attempts = new CellCounter(
      registry,
      'leasehold_attempts_total',
      'Attempts that ended, by job type, queue and outcome (the status written: succeeded, failed, dead, cancelled, queued; or lost, handed_back, abandoned)',
      ['type', 'queue', 'outcome'],
    );
    this.duration = new CellHistogram(registry, 'leasehold_attempt_duration_seconds', 'Run time of attempts, by job type and outcome', ['type', 'outcome'], [
      0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600,
    ]);
    this.wait = new CellHistogram(registry, 'leasehold_job_wait_seconds', "Time from a job's due time (run_at) to its attempt's start, by queue (database clock)", ['queue'], [
      0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400,
    ]);
    // once per claim, not per job: prom-client's own histogram
    this.claimBatch = new Histogram({ name: 'leasehold_claim_batch_size', help: 'Jobs returned by each claim (0: nothing was due)', buckets: [0, 1, 2, 5, 10, 20, 50, 100, 200, 500], registers: [registry] });
    this.leasesLost = new CellCounter(registry, 'leasehold_leases_lost_total', 'Leases this process lost (expired or taken over) before or while its job ran, by job type', ['type']);
    this.rescued = new CellCounter(registry, 'leasehold_leases_rescued_total', "Expired leases this process's sweeper rescued, by job type", ['type']);
    this.handedBack = new CellCounter(registry, 'leasehold_jobs_handed_back_total', 'Jobs handed back at shutdown (running at the deadline, or claimed and not started), by job type', ['type']);
    this.observer = {
      claimed: (count) => this.claimBatch.observe(count),
      started: (job) => {
        const cells = this.#cellsOf(job);
        if (job.startedAt) cells.wait.observe(Math.max(0, job.startedAt.getTime() - job.runAt.getTime()) / 1000);
        return cells;
      },
      leaseLost: (job) => this.leasesLost.cell(job.type).n++,
      handedBack: (jobs) => {
        for (const job of jobs) this.handedBack.cell(job.type).n++;
      },
      rescued: (type) => this.rescued.cell(type).n++,
    };
  }

  #cellsOf(job: ClaimedJob): JobCells {
    // a drain runs long stretches of one type and queue: compared, not hashed
    const last = this.#last;
    if (last && last.type === job.type && last.queue === job.queue) return last;
    let byQueue = this.#jobs.get(job.type);
    if (!byQueue) this.#jobs.set(job.type, (byQueue = new Map()));
    let cells = byQueue.get(job.queue);
    if (!cells) byQueue.set(job.queue, (cells = new JobCells(this, job.type, job.queue)));
    return (this.#last = cells);
  }
}
