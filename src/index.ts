/**
 * leasehold: background jobs and recurring schedules kept in the database you already run.
 *
 * ```ts
 * const storage = await openStorage('sqlite:app.db');
 * await storage.migrate();
 * const client = createClient({ storage, jobs: [sendEmail] });
 * await client.enqueue('send-email', { to: 'a@example.com' });
 * await new Worker({ storage, jobs: [sendEmail] }).start();
 * ```
 */
export * from './core/index.js';
export { Client, createClient, findUnhandled } from './runtime/client.js';
export type { ClientOptions, EnqueueItem, EnqueuedJob } from './runtime/client.js';
export { defaultLogger, newWorkerId } from './runtime/env.js';
export { JobRegistry, defineJob } from './runtime/job-definition.js';
export type { AnyJobDefinition, JobContext, JobDefinition, JobHandler } from './runtime/job-definition.js';
export { DEFAULT_RETENTION, Retention } from './runtime/retention.js';
export type { PruneReport, RetentionOptions } from './runtime/retention.js';
export { VERSION } from './runtime/version.js';
export { Worker } from './runtime/worker.js';
export type { DrainReport, StopReport, WorkerOptions } from './runtime/worker.js';
export { DEFAULT_DB_URL, openStorage, parseDbUrl } from './storage/open.js';
export { Locks, LockLostError, LockTimeoutError, createLocks } from './runtime/locks.js';
export type { AcquireOptions, Lock, LockOptions } from './runtime/locks.js';
export { Scheduler, syncSchedules, upsertSchedule } from './runtime/scheduler.js';
export type { SchedulerOptions } from './runtime/scheduler.js';
export { nextAfterFor, validateSchedule } from './runtime/cron.js';
export { createHealth, createMetrics, createObserveApp, healthRoutes, metricsRoutes, serveObserve, SAMPLER_LOCK } from './observe/index.js';
export type { Health, HealthOptions, HealthReport, Metrics, MetricsOptions, ObserveEndpoints, RunningObserve, ServeObserveOptions, WorkerLike } from './observe/index.js';
export { ALERTS_LOCK, AlertEvaluator } from './runtime/alert-evaluator.js';
export type { AlertEvaluatorOptions, AlertOptions } from './runtime/alert-evaluator.js';
export { alertWebhookJob } from './runtime/alert-webhook.js';
export type { AlertWebhookPayload } from './runtime/alert-webhook.js';
