/**
 * An operator's calls that the client does not carry yet: queue health and recent attempt
 * outcomes (reads), and a schedule's enable, disable and run-now (the schedule store's guarded
 * writes, as `leasehold schedules enable|disable|run-now` does them); and, from their own files,
 * search, counts, charts, a job's events, recorded retry/cancel, bulk actions and the reads of
 * workflows and batches. Each takes a Storage;
 * `operatorApi` bundles them under the names the dashboard's client shape uses, and
 * `withOperatorApi` puts them beside a client's own methods.
 */
import type { JobRow, ScheduleRow } from '../core/index.js';
import { LeaseholdError, ValidationError } from '../core/index.js';
import type { AttemptChart } from '../core/charts.js';
import type { JobSearch, JobSearchPage, JobSummary, JobSummaryQuery } from '../core/search.js';
import type { AttemptOutcomeCount, BatchRow, JobEvent, OperatorRef, QueueHealth, Storage, WorkflowGraph, WorkflowNode } from '../core/storage.js';
import type { BulkOptions, BulkPreview, BulkRequest, BulkResult } from './bulk.js';
import { previewBulk, runBulk } from './bulk.js';
import type { ChartQuery } from './charts.js';
import { attemptChart } from './charts.js';
import type { Client } from './client.js';
import type { FoundJobs } from './job-search.js';
import { findJobs, searchJobs, summarizeJobs } from './job-search.js';
import { cancelJob, retryJob } from './operator-jobs.js';
import { batchMembers, listBatches, workflowGraph } from './operator-workflows.js';
import { nextAfterFor } from './cron.js';
import { LocalBus } from './env.js';
import type { JobRegistry } from './job-definition.js';
import { scheduledJobOf } from './scheduler.js';

/** the longest window attemptOutcomes looks back */
export const MAX_OUTCOME_WINDOW_MS = 7 * 86_400_000;

async function scheduleOf(storage: Storage, name: string): Promise<ScheduleRow> {
  const row = await storage.schedules.get({ name });
  if (!row) throw new LeaseholdError('SCHEDULE_NOT_FOUND', `schedule ${name} not found`);
  return row;
}

/**
 * Enable or disable a schedule. Enabling a disabled one starts from its next future slot (the
 * disabled period is not a misfire); enabling an enabled one changes nothing.
 */
export async function setScheduleEnabled(storage: Storage, name: string, enabled: boolean): Promise<ScheduleRow> {
  const row = await scheduleOf(storage, name);
  const next = enabled && !row.enabled ? nextAfterFor(row)(await storage.now()) : undefined;
  const after = await storage.schedules.setEnabled({ name, enabled, ...(next !== undefined ? { nextRunAt: next } : {}) });
  if (!after) throw new LeaseholdError('SCHEDULE_NOT_FOUND', `schedule ${name} not found`);
  return after;
}

/** One job of the schedule now (its regular slots unchanged); this process's idle workers look at once. */
export async function runScheduleNow(storage: Storage, name: string, registry?: JobRegistry | null): Promise<JobRow> {
  const row = await scheduleOf(storage, name);
  const job = await storage.schedules.runNow({ name, job: scheduledJobOf(row, registry) });
  if (!job) throw new LeaseholdError('SCHEDULE_NOT_FOUND', `schedule ${name} not found`);
  LocalBus.for(storage).jobsEnqueued();
  return job;
}

/** Attempts that ended in the last `sinceMs` (at most a week), by type, queue and outcome. */
export function attemptOutcomes(storage: Storage, sinceMs: number): Promise<AttemptOutcomeCount[]> {
  if (!Number.isInteger(sinceMs) || sinceMs < 1 || sinceMs > MAX_OUTCOME_WINDOW_MS) {
    throw new ValidationError('INVALID_OPTION', `sinceMs must be a whole number of ms from 1 to ${MAX_OUTCOME_WINDOW_MS}; got ${String(sinceMs)}`);
  }
  return storage.attempts.outcomes({ sinceMs });
}

export type { BulkPreview } from './bulk.js';

/** The operator calls {@link withOperatorApi} adds to a client: what the dashboard's extra pages and buttons use. */
export interface OperatorApi {
  /** Per queue: due, running, and the age of the oldest due job. */
  queueHealth(): Promise<QueueHealth[]>;
  /** Attempts ended in the last `sinceMs` (at most 7 days), by type, queue and outcome. */
  attemptOutcomes(params: { sinceMs: number }): Promise<AttemptOutcomeCount[]>;
  /** Enables or disables a schedule by name. */
  setScheduleEnabled(name: string, enabled: boolean): Promise<ScheduleRow>;
  /** Enqueues one job of the schedule now, outside its timing. */
  runScheduleNow(name: string): Promise<JobRow>;
  /** Searches jobs (prefixes, key, id, text), with a count up to `countCap`. */
  findJobs(params: JobSearch & { countCap?: number | undefined }): Promise<FoundJobs>;
  /** The same page of jobs without the count (a live refresh of a filter counted a moment ago). */
  searchJobs(params: JobSearch): Promise<JobSearchPage>;
  /** Job counts by status, bounded so they stay cheap on large tables. */
  summarizeJobs(params?: JobSummaryQuery): Promise<JobSummary>;
  /** Attempt outcomes over time, for the charts page. */
  attemptChart(params: ChartQuery): Promise<AttemptChart>;
  /** A job's operator events (retries, cancels, bulk actions), oldest first. */
  jobEvents(jobId: string): Promise<JobEvent[]>;
  /** Retries a job now, recording who asked. */
  retryJob(id: string, by: OperatorRef): Promise<JobRow>;
  /** Cancels a job, recording who asked. */
  cancelJob(id: string, by: OperatorRef): Promise<JobRow>;
  /** How many jobs a bulk action would touch, counted before it runs. */
  previewBulk(req: BulkRequest): Promise<BulkPreview>;
  /** Runs a bulk retry, cancel or delete over the jobs matching a filter. */
  runBulk(opts: BulkOptions): Promise<BulkResult>;
  /** The workflow a job belongs to: at most `limit` jobs (default 500), those nearest it, and the edges between them. */
  workflowGraph(jobId: string, limit?: number): Promise<WorkflowGraph>;
  /** Batches newest first, below `beforeId`. */
  listBatches(params?: { beforeId?: string | undefined; limit?: number | undefined }): Promise<BatchRow[]>;
  /** A batch's members in id order, above `afterId`. */
  batchMembers(params: { batchId: string; afterId?: string | undefined; limit?: number | undefined }): Promise<WorkflowNode[]>;
}

export function operatorApi(storage: Storage, registry?: JobRegistry | null): OperatorApi {
  return {
    queueHealth: () => storage.queues.health(),
    attemptOutcomes: (p) => attemptOutcomes(storage, p.sinceMs),
    setScheduleEnabled: (name, enabled) => setScheduleEnabled(storage, name, enabled),
    runScheduleNow: (name) => runScheduleNow(storage, name, registry),
    findJobs: (p) => findJobs(storage, p),
    searchJobs: (p) => searchJobs(storage, p),
    summarizeJobs: (p) => summarizeJobs(storage, p),
    attemptChart: (p) => attemptChart(storage, p),
    jobEvents: (jobId) => storage.jobs.events({ jobId }),
    retryJob: (id, by) => retryJob(storage, id, by),
    cancelJob: (id, by) => cancelJob(storage, id, by),
    previewBulk: (req) => previewBulk(storage, req),
    runBulk: (o) => runBulk(storage, o),
    workflowGraph: (jobId, limit) => workflowGraph(storage, jobId, limit),
    listBatches: (p) => listBatches(storage, p),
    batchMembers: (p) => batchMembers(storage, p),
  };
}

/** The client with the operator calls beside its own (its methods keep their `this`). */
export function withOperatorApi<C extends Client>(client: C): C & OperatorApi {
  const extra = operatorApi(client.storage, client.registry);
  return new Proxy(client, {
    get(target, prop) {
      if (Object.hasOwn(extra, prop)) return extra[prop as keyof OperatorApi];
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
    has: (target, prop) => Object.hasOwn(extra, prop) || Reflect.has(target, prop),
  }) as C & OperatorApi;
}
