/**
 * An operator's change to one job, recorded in its history: who asked and from where go with
 * the change (the storage writes the event in the change's transaction). As the client's
 * retryNow / cancel: a job that is not there or not in a state the change applies to is an
 * error; this process's idle workers look at once after a retry, and a handler of a cancelled
 * job running in this process is signalled.
 */
import { hostname, userInfo } from 'node:os';
import { InvalidStateError, JobNotFoundError } from '../core/index.js';
import { retryRefusal } from '../core/operator.js';
import type { JobRow, OperatorRef, Storage } from '../core/storage.js';
import { checkId } from './client-input.js';
import { LocalBus } from './env.js';

/** Make a failed, dead, cancelled or waiting job due now, its attempt budget reset; recorded as 'retried' when `by` is given. */
export async function retryJob(storage: Storage, id: string, by?: OperatorRef): Promise<JobRow> {
  const { job, applied } = await storage.jobs.retry({ id: checkId(id), ...by });
  if (!job) throw new JobNotFoundError(id);
  if (!applied) throw new InvalidStateError(id, job.status, 'retry', retryRefusal(job) ?? undefined);
  LocalBus.for(storage).jobsEnqueued();
  return job;
}

/** Cancel a waiting or running job for good; recorded as 'cancelled' when `by` is given. */
export async function cancelJob(storage: Storage, id: string, by?: OperatorRef): Promise<JobRow> {
  const { job, applied } = await storage.jobs.cancel({ id: checkId(id), ...by });
  if (!job) throw new JobNotFoundError(id);
  if (!applied) throw new InvalidStateError(id, job.status, 'cancel');
  LocalBus.for(storage).jobCancelled(job.id);
  return job;
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
const printable = (s: string, max: number): string => s.replace(CONTROL, '?').slice(0, max) || '?';

/** Who runs this command-line process, as its events record it: 'cli:<os user>@<host>', from the host. */
export function cliOperator(): OperatorRef {
  let user = process.env.USER ?? 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry for this uid (a container): the environment's name stands
  }
  const host = printable(hostname(), 100);
  return { actor: `cli:${printable(user, 90)}@${host}`, source: host };
}

/** Who a library call is, as its events record it: 'api', from this host. */
export const API_OPERATOR: OperatorRef = { actor: 'api', source: printable(hostname(), 100) };
