/**
 * leasehold: background jobs and recurring schedules kept in the database you already run.
 *
 * Define job types, open storage, then give the same `jobs` list to a client (which enqueues,
 * typed by that list) and to a worker (which runs them):
 *
 * ```ts
 * import { Worker, createClient, defineJob, openStorage } from 'leasehold';
 * import { z } from 'zod';
 *
 * const sendEmail = defineJob({
 *   type: 'send-email',
 *   schema: z.object({ to: z.string().email() }),
 *   handler: async ({ to }, ctx) => { await ctx.once(`email:${ctx.job.id}`, () => mailer.send(to)); },
 * });
 * const jobs = [sendEmail];
 *
 * const storage = await openStorage('sqlite:app.db');
 * await storage.migrate();
 * const client = createClient({ storage, jobs });
 * await client.enqueue('send-email', { to: 'a@example.com' });
 * await new Worker({ storage, jobs }).start();
 * ```
 *
 * Adapters: `leasehold/sqlite`, `leasehold/postgres`, `leasehold/mysql`, `leasehold/memory`;
 * the contract they implement: `leasehold/storage`; the web dashboard: `leasehold/dashboard`.
 *
 * @packageDocumentation
 */

// Job types
export { defineJob } from './runtime/job-definition.js';
export type { AnyJobDefinition, JobContext, JobDefinition, JobHandler, ParentResult } from './runtime/job-definition.js';
export { cancel, fail, snooze } from './core/outcome.js';
export type { JobOutcome } from './core/outcome.js';
export type { RetryPolicy, Jitter } from './core/retry.js';
export type { QueueFlow, RateLimit, TypeFlow } from './core/flow.js';
export type { LeaseExpiredPolicy } from './core/decide.js';

// Storage
export { DEFAULT_DB_URL, openStorage } from './storage/open.js';
export type { OpenOptions } from './storage/open.js';
export type { Capabilities, MigrateResult, Storage } from './core/storage.js';

// Enqueue, schedules and the operator's operations
export { createClient } from './runtime/client.js';
export type { Client, ClientOptions, EnqueueItem, EnqueueItemOptions, EnqueuedJob, JobInput, JobList, JobOf, JobTypeName, ScheduleFor, UnhandledJobs } from './runtime/client.js';
export type { EnqueueOptions, JobDefaults, UniqueOption } from './core/job-input.js';
export { MISFIRE_POLICIES } from './core/schedules.js';
export type { LockRow, MisfirePolicy, ScheduleInput, ScheduleRow, ScheduleSource, ScheduleSpec } from './core/schedules.js';
export type { AlertStateRow, AttemptRow, EffectRow, InsertOutcome, JobCount, JobQuery, JobRow, QueueState, WorkerRow } from './core/storage.js';
export type { FlowItem, FlowOptions } from './runtime/client-workflows.js';
export type { StoredParent } from './core/workflow-graph.js';
export type { BatchOptions, Batches } from './runtime/client-batches.js';
export type { BatchRow, BatchState, JobProgress, ParentPolicy } from './core/storage.js';
export { PROGRESS_LIMIT_BYTES, RESULT_LIMIT_BYTES } from './core/results.js';
export { ATTEMPT_OUTCOMES, JOB_STATUSES } from './core/status.js';
export type { AttemptOutcome, JobStatus } from './core/status.js';

// Running jobs
export { Worker } from './runtime/worker.js';
export type { DrainReport, StopReport, WorkerOptions } from './runtime/worker.js';
export type { RetentionOptions } from './runtime/retention.js';
export type { Logger } from './runtime/env.js';
export type { AttemptEnd, AttemptObservation, WorkerObserver } from './runtime/observer.js';

// Locks
export { LockLostError, LockTimeoutError, createLocks } from './runtime/locks.js';
export type { AcquireOptions, Lock, LockOptions, Locks } from './runtime/locks.js';

// Errors: each has a stable `code`
export {
  AbortReason,
  InvalidStateError,
  JobNotFoundError,
  LeaseLostError,
  LeaseholdError,
  NotSupportedError,
  PermanentFailure,
  SchemaTooNewError,
  TransientStorageError,
  UnknownJobTypeError,
  ValidationError,
  isLeaseholdError,
} from './core/errors.js';
export type { ErrorCode } from './core/errors.js';

// Metrics, health and alerts
export { createHealth, createMetrics, createObserveApp, healthRoutes, metricsRoutes, serveObserve } from './observe/index.js';
export type { Health, HealthOptions, HealthReport, Metrics, MetricsOptions, ObserveEndpoints, RunningObserve, ServeObserveOptions, WorkerLike } from './observe/index.js';
export { AlertEvaluator } from './runtime/alert-evaluator.js';
export type { AlertEvaluatorOptions, AlertOptions } from './runtime/alert-evaluator.js';
export { alertWebhookJob } from './runtime/alert-webhook.js';
export type { AlertWebhookPayload } from './runtime/alert-webhook.js';
export { ALERT_KINDS } from './core/alerts.js';
export type { AlertKind, AlertNotification, AlertRule, AlertRuleBase, AlertRuleSpec } from './core/alerts.js';

export { VERSION } from './runtime/version.js';
