/**
 * The decisions: given what happened to an attempt, what the job becomes. Pure; the worker
 * and the sweeper hand the result to `leases.finish` as one fenced write.
 */
import { isLeaseholdError } from './errors.js';
import type { RetryPolicy } from './retry.js';
import { retryDelay } from './retry.js';
import type { ErrorInfo, ExpiredLease, FinishParams } from './storage.js';

/** How an attempt ended, as the worker observed it. */
export type AttemptResult =
  | { kind: 'success'; result?: string }
  | { kind: 'error'; error: unknown }
  | { kind: 'permanent'; error: ErrorInfo }
  | { kind: 'snooze'; delayMs: number }
  | { kind: 'cancel'; reason: string }
  | { kind: 'timeout'; timeoutMs: number }
  | { kind: 'max_runtime'; maxRuntimeMs: number }
  | { kind: 'shutdown' };

/** What to do with a job whose lease expired under a dead or paused worker. */
export type LeaseExpiredPolicy = 'retry' | 'fail';

export type Decision = Omit<FinishParams, 'id' | 'leaseToken'>;

const STACK_LIMIT = 4_000;
const MESSAGE_LIMIT = 2_000;

/** Turn anything thrown into the short record kept in history. */
export function errorInfo(error: unknown): ErrorInfo {
  if (error instanceof Error) {
    const rawCode = (error as { code?: unknown }).code;
    const code = isLeaseholdError(error) || typeof rawCode === 'string' ? String(rawCode) : error.name || 'Error';
    return {
      code,
      message: truncate(error.message, MESSAGE_LIMIT),
      stack: error.stack ? truncate(error.stack, STACK_LIMIT) : null,
    };
  }
  return { code: 'NON_ERROR_THROWN', message: truncate(safeString(error), MESSAGE_LIMIT), stack: null };
}

/**
 * Retry or dead for a failure: dead once this attempt was the last one allowed.
 * `attempts` is the count including the attempt that just failed.
 */
function failure(attempts: number, maxAttempts: number, err: ErrorInfo, outcome: FinishParams['attempt']['outcome'], policy: RetryPolicy, random: () => number): Decision {
  if (attempts >= maxAttempts) {
    return { status: 'dead', error: err, attempt: { outcome: outcome === 'failed' ? 'dead' : outcome, error: err, retryDelayMs: null } };
  }
  const delay = retryDelay(policy, attempts, random);
  return { status: 'failed', runAfterMs: delay, error: err, attempt: { outcome, error: err, retryDelayMs: delay } };
}

export function decideFinish(
  job: { attempts: number; maxAttempts: number },
  result: AttemptResult,
  policy: RetryPolicy,
  random: () => number,
): Decision {
  switch (result.kind) {
    case 'success':
      return result.result === undefined ? { status: 'succeeded', attempt: { outcome: 'succeeded' } } : { status: 'succeeded', result: result.result, attempt: { outcome: 'succeeded' } };
    case 'error':
      return failure(job.attempts, job.maxAttempts, errorInfo(result.error), 'failed', policy, random);
    case 'permanent':
      return { status: 'dead', error: result.error, attempt: { outcome: 'dead', error: result.error } };
    case 'snooze':
      return { status: 'queued', runAfterMs: result.delayMs, uncountAttempt: true, attempt: { outcome: 'snoozed', retryDelayMs: result.delayMs } };
    case 'cancel': {
      const err = { code: 'CANCELLED', message: result.reason };
      return { status: 'cancelled', error: err, attempt: { outcome: 'cancelled', error: err } };
    }
    case 'timeout': {
      const err = { code: 'TIMEOUT', message: `no progress for ${result.timeoutMs} ms; attempt aborted` };
      return failure(job.attempts, job.maxAttempts, err, 'timed_out', policy, random);
    }
    case 'max_runtime': {
      const err = { code: 'MAX_RUNTIME', message: `ran past its max runtime of ${result.maxRuntimeMs} ms; attempt aborted` };
      return failure(job.attempts, job.maxAttempts, err, 'max_runtime', policy, random);
    }
    case 'shutdown':
      // Handed back due now; the attempt was not the job's fault, so it is not counted.
      return { status: 'queued', runAfterMs: 0, uncountAttempt: true, attempt: { outcome: 'handed_back' } };
  }
}

/** The sweeper's decision for an expired lease. Guarded so it lands only if still expired. */
export function decideRescue(lease: ExpiredLease, onLeaseExpired: LeaseExpiredPolicy, policy: RetryPolicy, random: () => number): Decision {
  const err = { code: 'LEASE_EXPIRED', message: `lease held by ${lease.lockedBy ?? 'unknown worker'} expired without a heartbeat` };
  if (onLeaseExpired === 'fail') {
    return { status: 'dead', error: err, onlyIfExpired: true, attempt: { outcome: 'lease_expired', error: err } };
  }
  return { ...failure(lease.attempts, lease.maxAttempts, err, 'lease_expired', policy, random), onlyIfExpired: true };
}

function truncate(s: string, n: number): string {
  return s.length <= n ? s : `${s.slice(0, n)}… (${s.length - n} more characters)`;
}

function safeString(v: unknown): string {
  try {
    return typeof v === 'string' ? v : JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}
