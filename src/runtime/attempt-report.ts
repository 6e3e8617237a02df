/**
 * What an attempt's end means: the result a handler's return value, thrown error or abort
 * stands for, and the log line of an attempt whose finish was written (or refused: the lease
 * was lost), with the outcome the worker counts. Per-job info lines are built only when info is
 * enabled, and the attempt's logger is only read for a line that is written.
 */
import type { AbortReason, AttemptResult, Decision } from '../core/index.js';
import { PermanentFailure, encodeResult, errorInfo, isJobOutcome } from '../core/index.js';
import type { FinishResult } from '../core/storage.js';
import type { Logger } from './env.js';

export const SUCCESS: AttemptResult = Object.freeze({ kind: 'success' });

/** What a handler's return value means: a success with it as the result, unless it is a snooze, cancel or fail outcome or cannot be stored. */
export function classify(v: unknown): AttemptResult {
  if (v === undefined || v === null) return SUCCESS;
  if (isJobOutcome(v)) {
    if (v.kind === 'snooze') return { kind: 'snooze', delayMs: v.delayMs };
    if (v.kind === 'cancel') return { kind: 'cancel', reason: v.reason };
    return { kind: 'permanent', error: { code: 'PERMANENT_FAILURE', message: v.reason } };
  }
  const r = encodeResult(v);
  if (!r.ok) return { kind: 'permanent', error: r.error };
  return r.json === undefined ? SUCCESS : { kind: 'success', result: r.json };
}

export function classifyError(error: unknown): AttemptResult {
  if (error instanceof PermanentFailure) return { kind: 'permanent', error: errorInfo(error) };
  return { kind: 'error', error };
}

/** What an abort is recorded as; null when it is not ours to record (a lost lease, a cancel). */
export function abortResult(reason: AbortReason, job: { timeoutMs: number; maxRuntimeMs: number }): AttemptResult | null {
  switch (reason.code) {
    case 'TIMEOUT':
      return { kind: 'timeout', timeoutMs: job.timeoutMs };
    case 'MAX_RUNTIME':
      return { kind: 'max_runtime', maxRuntimeMs: job.maxRuntimeMs };
    case 'SHUTDOWN':
      return { kind: 'shutdown' };
    default:
      return null;
  }
}

/** Logs how a finish went; returns the attempt's outcome (a job status, 'lost', 'snoozed' or 'handed_back'). */
export function reportFinish(host: { readonly log: Logger }, info: boolean, decision: Decision, result: AttemptResult, res: FinishResult, durationMs: number, maxAttempts: number): string {
  // the attempt's logger is a pino child made on first use: read only when a line is written
  if (!res.applied) {
    host.log.warn({ event: 'job.lease_lost', outcome: decision.attempt.outcome, durationMs }, 'lease lost before the outcome was recorded; result discarded');
    return 'lost';
  }
  if (decision.status === 'succeeded') {
    if (info) host.log.info({ event: 'job.succeeded', outcome: decision.attempt.outcome, durationMs, maxAttempts }, 'job succeeded');
    return 'succeeded';
  }
  const fields = { outcome: decision.attempt.outcome, durationMs, maxAttempts };
  switch (decision.status) {
    case 'failed':
      host.log.warn({ event: 'job.failed', ...fields, nextDelayMs: decision.runAfterMs, error: decision.error?.message }, 'job failed; will retry');
      break;
    case 'dead':
      host.log.error({ event: 'job.dead', ...fields, error: decision.error?.message }, 'job is dead');
      break;
    case 'cancelled':
      if (info) host.log.info({ event: 'job.cancelled', ...fields }, 'job cancelled by its handler');
      break;
    case 'queued':
      if (result.kind === 'shutdown') host.log.warn({ event: 'job.handed_back', ...fields }, 'shutdown deadline: lease handed back, job due now');
      else if (info) host.log.info({ event: 'job.snoozed', ...fields, delayMs: decision.runAfterMs }, 'job snoozed');
      break;
  }
  return result.kind === 'shutdown' ? 'handed_back' : result.kind === 'snooze' ? 'snoozed' : decision.status;
}
