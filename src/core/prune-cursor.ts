/** The check on where a prune batch starts: a ValidationError before anything is deleted, the same on every database. */
import { ValidationError } from './errors.js';
import type { PruneCursor } from './storage-jobs.js';

/** `after` as given (null when absent); throws unless it is a cursor as a prune batch returns one. */
export function checkPruneCursor(after: PruneCursor | null | undefined): PruneCursor | null {
  if (after === undefined || after === null) return null;
  const at = (after as { finishedAt?: unknown }).finishedAt;
  const id = (after as { id?: unknown }).id;
  if (!(at instanceof Date) || Number.isNaN(at.getTime()) || typeof id !== 'string' || !/^[0-9]{1,19}$/.test(id)) {
    throw new ValidationError('INVALID_OPTION', `after must be a cursor a prune batch returned ({ finishedAt: Date, id: job id }); got ${JSON.stringify(after)}`);
  }
  return after;
}
