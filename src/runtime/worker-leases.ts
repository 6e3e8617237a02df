/**
 * The leases a worker holds, from its claim until the job's attempt is over: one object per
 * claimed job, the same while the job waits in the local buffer, waits for a slot of its
 * type's cluster-wide cap, or runs. The heartbeater renews these objects, so its answer
 * (renewed, lost, cancelled) reaches the job wherever it is by then — a job that moved from the
 * buffer to a slot while a renewal was out included — and so does an operator's cancel in this
 * process. A lease lost before its job started takes the job out of the buffer: it never starts.
 */
import type { AbortReason } from '../core/index.js';
import type { ClaimedJob } from '../core/storage.js';
import type { Attempt } from './attempt.js';
import type { Logger } from './env.js';
import type { WorkerObserver } from './observer.js';
import type { HeldLease } from './heartbeater.js';

export class JobLease implements HeldLease {
  /** the attempt running the job, once it started */
  attempt: Attempt | null = null;
  /** the lease is gone (lost, lapsed, cancelled): no longer renewed; a job not started never starts */
  lost = false;

  constructor(
    readonly job: ClaimedJob,
    /** performance.now() until which the lease is surely held (see HeldLease) */
    public expiresAt: number,
    private readonly book: LeaseBook,
  ) {}

  get pastMaxRuntime(): boolean {
    return this.attempt?.pastMaxRuntime ?? false;
  }

  abort(reason: AbortReason): void {
    if (this.lost) return;
    this.lost = true;
    if (this.attempt) this.attempt.abort(reason);
    else this.book.dropUnstarted(this, reason);
  }
}

export class LeaseBook {
  /** claimed, not started, in claim order */
  readonly #buffer: JobLease[] = [];
  /** every lease held, by job id */
  readonly #held = new Map<string, JobLease>();

  constructor(
    private readonly log: Logger,
    private readonly observer?: WorkerObserver,
  ) {}

  /** jobs waiting in the buffer */
  get buffered(): number {
    return this.#buffer.length;
  }

  /** A claimed job whose lease is surely held until `expiresAt` (performance.now()): into the buffer. */
  accept(job: ClaimedJob, expiresAt: number): JobLease {
    const lease = new JobLease(job, expiresAt, this);
    this.#buffer.push(lease);
    this.#held.set(job.id, lease);
    return lease;
  }

  /** The oldest buffered job, taken out of the buffer to start (its lease stays held). */
  next(): JobLease | undefined {
    return this.#buffer.shift();
  }

  /** Every buffered job, taken out of the buffer (stop(): they are handed back, never started). */
  takeBuffer(): JobLease[] {
    return this.#buffer.splice(0);
  }

  get(jobId: string): JobLease | undefined {
    return this.#held.get(jobId);
  }

  /** The leases to renew: every one held and not lost. */
  *renewable(): Iterable<HeldLease> {
    for (const lease of this.#held.values()) if (!lease.lost) yield lease;
  }

  /** The lease is no longer ours to renew: its attempt is over, or its job was given back. */
  release(lease: JobLease): void {
    if (this.#held.get(lease.job.id) === lease) this.#held.delete(lease.job.id);
  }

  /** Lost before its job started: out of the buffer and the book; nothing to record. */
  dropUnstarted(lease: JobLease, reason: AbortReason): void {
    const i = this.#buffer.indexOf(lease);
    if (i >= 0) this.#buffer.splice(i, 1);
    this.release(lease);
    this.log.warn({ event: 'job.lease_lost', jobId: lease.job.id, reason: reason.code }, 'lease lost before the job started');
    this.observer?.leaseLost?.(lease.job);
  }
}
