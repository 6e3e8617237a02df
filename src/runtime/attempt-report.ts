/**
 * The log line of an attempt whose finish was written (or refused: the lease was lost), and the
 * outcome the worker counts. Per-job info lines are built only when info is enabled, and the
 * attempt's logger is only read for a line that is written.
 */
import type { AttemptResult, Decision } from '../core/index.js';
import type { FinishResult } from '../core/storage.js';
import type { Logger } from './env.js';

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
