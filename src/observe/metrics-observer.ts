/**
 * The in-process metrics and the WorkerObserver that feeds them: attempts, their durations and
 * waits, claims, leases lost, rescued and handed back. An attempt costs a few map lookups and
 * counter bumps: the label children are made once per type, queue and outcome and kept.
 */
import { Counter, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';
import type { ClaimedJob } from '../core/storage.js';
import type { AttemptObservation, WorkerObserver } from '../runtime/observer.js';

type CounterChild = ReturnType<Counter<string>['labels']>;
type HistogramChild = ReturnType<Histogram<string>['labels']>;

/** The instruments one attempt touches when it ends, per outcome. */
interface OutcomeCells {
  attempts: CounterChild;
  duration: HistogramChild;
}

/** Everything kept per (type, queue). */
interface JobCells {
  wait: HistogramChild;
  outcomes: Map<string, OutcomeCells>;
}

export class InProcessMetrics {
  readonly attempts: Counter<'type' | 'queue' | 'outcome'>;
  readonly duration: Histogram<'type' | 'outcome'>;
  readonly wait: Histogram<'queue'>;
  readonly claimBatch: Histogram;
  readonly leasesLost: Counter<'type'>;
  readonly rescued: Counter<'type'>;
  readonly handedBack: Counter<'type'>;
  readonly observer: WorkerObserver;
  readonly #cells = new Map<string, JobCells>();

  constructor(registry: Registry) {
    const registers = [registry];
    this.attempts = new Counter({
      name: 'leasehold_attempts_total',
      help: 'Attempts that ended, by job type, queue and outcome (the status written: succeeded, failed, dead, cancelled, queued; or lost, handed_back, abandoned)',
      labelNames: ['type', 'queue', 'outcome'],
      registers,
    });
    this.duration = new Histogram({
      name: 'leasehold_attempt_duration_seconds',
      help: 'Run time of attempts, by job type and outcome',
      labelNames: ['type', 'outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
      registers,
    });
    this.wait = new Histogram({
      name: 'leasehold_job_wait_seconds',
      help: "Time from a job's due time (run_at) to its attempt's start, by queue (database clock)",
      labelNames: ['queue'],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400],
      registers,
    });
    this.claimBatch = new Histogram({
      name: 'leasehold_claim_batch_size',
      help: 'Jobs returned by each claim (0: nothing was due)',
      buckets: [0, 1, 2, 5, 10, 20, 50, 100, 200, 500],
      registers,
    });
    const perType = (name: string, help: string) => new Counter({ name, help, labelNames: ['type'] as const, registers });
    this.leasesLost = perType('leasehold_leases_lost_total', 'Leases this process lost (expired or taken over) before or while its job ran, by job type');
    this.rescued = perType('leasehold_leases_rescued_total', "Expired leases this process's sweeper rescued, by job type");
    this.handedBack = perType('leasehold_jobs_handed_back_total', 'Jobs handed back at shutdown (running at the deadline, or claimed and not started), by job type');
    this.observer = this.#makeObserver();
  }

  #makeObserver(): WorkerObserver {
    return {
      claimed: (count) => this.claimBatch.observe(count),
      attempt: (job, run) => {
        const cells = this.#cellsFor(job);
        if (job.startedAt) cells.wait.observe(Math.max(0, job.startedAt.getTime() - job.runAt.getTime()) / 1000);
        run();
        const seen: AttemptObservation = {
          ended: ({ outcome, durationMs }) => {
            const c = this.#outcomeCells(job, cells, outcome);
            c.attempts.inc();
            c.duration.observe(durationMs / 1000);
            if (outcome === 'lost') this.leasesLost.labels(job.type).inc();
            else if (outcome === 'handed_back') this.handedBack.labels(job.type).inc();
          },
        };
        return seen;
      },
      leaseLost: (job) => this.leasesLost.labels(job.type).inc(),
      handedBack: (jobs) => {
        for (const job of jobs) this.handedBack.labels(job.type).inc();
      },
      rescued: (type) => this.rescued.labels(type).inc(),
    };
  }

  #cellsFor(job: ClaimedJob): JobCells {
    const key = `${job.type}\n${job.queue}`;
    let cells = this.#cells.get(key);
    if (!cells) this.#cells.set(key, (cells = { wait: this.wait.labels(job.queue), outcomes: new Map() }));
    return cells;
  }

  #outcomeCells(job: ClaimedJob, cells: JobCells, outcome: string): OutcomeCells {
    let c = cells.outcomes.get(outcome);
    if (!c) cells.outcomes.set(outcome, (c = { attempts: this.attempts.labels(job.type, job.queue, outcome), duration: this.duration.labels(job.type, outcome) }));
    return c;
  }
}
