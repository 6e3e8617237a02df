/**
 * A claimed job waiting in the worker's local buffer for a free slot. Its lease is held (the
 * heartbeater renews it like a running job's) until the job starts; a lease lost meanwhile
 * takes the entry out of the buffer.
 */
import type { AbortReason } from '../core/index.js';
import type { ClaimedJob } from '../core/storage.js';
import type { Logger } from './env.js';
import type { HeldLease } from './heartbeater.js';

export type Buffered = HeldLease & { lost: boolean };

/** The buffer entry for `job`, whose lease surely lapses at `expiresAt` unless renewed (not yet added to `buffer`). */
export function bufferedLease(job: ClaimedJob, expiresAt: number, buffer: Buffered[], log: Logger): Buffered {
  const entry: Buffered = {
    job,
    expiresAt,
    pastMaxRuntime: false,
    lost: false,
    abort: (reason: AbortReason) => {
      // Lost while waiting in the buffer: drop it, nothing to record.
      entry.lost = true;
      const i = buffer.indexOf(entry);
      if (i >= 0) buffer.splice(i, 1);
      log.warn({ event: 'job.lease_lost', jobId: job.id, reason: reason.code }, 'lease lost before the job started');
    },
  };
  return entry;
}
