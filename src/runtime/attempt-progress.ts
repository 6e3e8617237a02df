/**
 * `ctx.progress(value, note?)`: one fenced write per report at most every `intervalMs`; reports
 * in between replace the pending one (the last value wins) and the attempt's finish waits for
 * the pending one to be written first, so a job's last report is never lost to the coalescing.
 */
import { encodeProgress, type ProgressValue } from '../core/results.js';
import type { ClaimedJob, Storage } from '../core/storage.js';
import type { Logger } from './env.js';

/** What the reporter needs from its attempt. */
export interface ProgressHost {
  readonly job: ClaimedJob;
  readonly storage: Storage;
  readonly log: Logger;
  /** A write found the lease gone: aborts the attempt (LEASE_LOST). */
  leaseLost(what: string): Error;
}

export class ProgressReporter {
  #pending: ProgressValue | undefined;
  #writing: Promise<void> | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** performance.now() of the last write's start */
  #lastAt = -Infinity;
  /** the lease was found lost: nothing more is written */
  #stopped = false;

  constructor(
    private readonly host: ProgressHost,
    private readonly intervalMs: number,
  ) {}

  /** Check the value now (throws INVALID_PROGRESS), write it now or once the interval has passed. */
  report(value: unknown, note?: string | null): void {
    this.#pending = encodeProgress(value, note);
    this.#schedule();
  }

  /** Whether a report still waits to be written (or is being written). */
  get busy(): boolean {
    return this.#pending !== undefined || this.#writing !== undefined;
  }

  /** Write what is pending now, without waiting for the interval; resolves once nothing is left (never rejects). */
  async flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    while (this.busy && !this.#stopped) {
      if (this.#writing) await this.#writing;
      else this.#write();
    }
  }

  #schedule(): void {
    if (this.#stopped || this.#writing || this.#timer) return;
    const wait = this.#lastAt + this.intervalMs - performance.now();
    if (wait <= 0) return this.#write();
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#write();
    }, wait);
    this.#timer.unref();
  }

  #write(): void {
    const v = this.#pending;
    if (v === undefined || this.#stopped) return;
    this.#pending = undefined;
    this.#lastAt = performance.now();
    const { job, storage } = this.host;
    this.#writing = storage.workflows.progress({ id: job.id, leaseToken: job.leaseToken, value: v.json, note: v.note }).then(
      (landed) => {
        if (landed) return;
        this.#stopped = true;
        this.#pending = undefined;
        this.host.leaseLost('progress');
      },
      (e: unknown) => this.host.log.warn({ event: 'progress.unrecorded', err: (e as Error).message }, 'progress could not be written; the next report replaces it'),
    ).finally(() => {
      this.#writing = undefined;
      if (this.#pending !== undefined) this.#schedule();
    });
  }
}
