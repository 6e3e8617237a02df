/** The check on where a prune batch starts: a ValidationError before anything is deleted, the same on every database. */
import { ValidationError } from './errors.js';
import { EARLIEST_TIME_MS, LATEST_TIME_MS } from './limits.js';
import type { PruneCursor } from './storage-jobs.js';

/** `after` as given (null when absent); throws unless it is a cursor as a prune batch returns one. */
export function checkPruneCursor(after: PruneCursor | null | undefined): PruneCursor | null {
  if (after === undefined || after === null) return null;
  const at = (after as { finishedAt?: unknown }).finishedAt;
  const id = (after as { id?: unknown }).id;
  // the range every database stores: a date or id past it would fail, or be read differently, on some
  const inRange = at instanceof Date && at.getTime() >= EARLIEST_TIME_MS && at.getTime() <= LATEST_TIME_MS;
  if (!inRange || typeof id !== 'string' || !/^[0-9]{1,19}$/.test(id) || BigInt(id) > 2n ** 63n - 1n) {
    throw new ValidationError('INVALID_OPTION', `after must be a cursor a prune batch returned ({ finishedAt: Date, id: job id }); got ${JSON.stringify(after)}`);
  }
  return after;
}
