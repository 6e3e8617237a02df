/**
 * The part of the client the dashboard uses. The first calls are required; each optional one
 * adds its page or button when present (schedules, locks, alerts, queue pause, throughput,
 * schedule actions, search, charts, bulk actions, recorded retry/cancel, the job's history, the
 * workflow graph and the batch pages),
 * so a narrower client still gets a working dashboard.
 */
import type { AttemptChart } from '../core/charts.js';
import type { JobSearch, JobSearchPage, JobSummary, JobSummaryQuery } from '../core/search.js';
import type { ScheduleRow, LockRow } from '../core/schedules.js';
import type { AlertStateRow, AttemptOutcomeCount, BatchRow, JobDependencies, JobEvent, JobRow, OperatorRef, QueueHealth, QueueState, WorkflowGraph, WorkflowNode } from '../core/storage.js';
import type { BulkOptions, BulkRequest, BulkResult } from '../runtime/bulk.js';
import type { ChartQuery } from '../runtime/charts.js';
import type { Client } from '../runtime/client.js';
import type { FoundJobs } from '../runtime/job-search.js';
import type { BulkPreview } from '../runtime/operator.js';

/**
 * What the dashboard reads and acts through: a {@link Client}'s read and admin methods, and optional
 * extras (from `withOperatorApi`) for the pages and buttons that need them.
 */
export type DashboardClient = Pick<Client, 'listJobs' | 'getJob' | 'listAttempts' | 'countJobs' | 'listWorkers' | 'listEffects' | 'unhandledJobs' | 'retryNow' | 'cancel'> & {
  /** the schedules page */
  listSchedules?: () => Promise<readonly ScheduleRow[]>;
  /** alert rules' states, shown on the overview */
  listAlerts?: () => Promise<readonly AlertStateRow[]>;
  /** queue pause and resume, offered on the queues page */
  queueStates?: () => Promise<readonly QueueState[]>;
  /** the queues page's Pause */
  pauseQueue?: (queue: string) => Promise<QueueState>;
  /** the queues page's Resume */
  resumeQueue?: (queue: string) => Promise<QueueState>;
  /** per queue: due, running, age of the oldest due job */
  queueHealth?: () => Promise<readonly QueueHealth[]>;
  /** attempts ended in the last `sinceMs`, by type, queue and outcome: the queues page's throughput */
  attemptOutcomes?: (params: { sinceMs: number }) => Promise<readonly AttemptOutcomeCount[]>;
  /** held locks and semaphore slots: the locks page */
  listLocks?: () => Promise<readonly LockRow[]>;
  /** the schedules page's Enable / Disable */
  setScheduleEnabled?: (name: string, enabled: boolean) => Promise<ScheduleRow>;
  /** the schedules page's Run now: one job of the schedule, now */
  runScheduleNow?: (name: string) => Promise<JobRow>;
  /** the jobs page's search (prefixes, key, id, text) with its count; without it the list filters exactly */
  findJobs?: (params: JobSearch & { countCap?: number | undefined }) => Promise<FoundJobs>;
  /** a page without its count: the live refresh of a filter whose count is kept (count-cache.ts) */
  searchJobs?: (params: JobSearch) => Promise<JobSearchPage>;
  /** the overview's bounded counts; without it countJobs */
  summarizeJobs?: (params?: JobSummaryQuery) => Promise<JobSummary>;
  /** the charts page */
  attemptChart?: (params: ChartQuery) => Promise<AttemptChart>;
  /** a job's operator events, interleaved with its attempts on its page */
  jobEvents?: (jobId: string) => Promise<readonly JobEvent[]>;
  /** Retry / Cancel recorded with who asked and from where; without them retryNow / cancel */
  retryJob?: (id: string, by: OperatorRef) => Promise<JobRow>;
  /** Cancel, recorded with who asked */
  cancelJob?: (id: string, by: OperatorRef) => Promise<JobRow>;
  /** bulk retry / cancel / delete of the jobs matching a filter: the count first, then the run */
  previewBulk?: (req: BulkRequest) => Promise<BulkPreview>;
  /** runs a bulk action the operator confirmed */
  runBulk?: (opts: BulkOptions) => Promise<BulkResult>;
  /** a job's workflow edges, linked on its page */
  jobDependencies?: (id: string) => Promise<JobDependencies>;
  /** a batch member's batch, its progress shown on the member's page */
  batches?: {
    /** one batch, or null */
    get: (batchId: string) => Promise<BatchRow | null>;
  };
  /** the workflow page: the workflow a job belongs to, bounded */
  workflowGraph?: (jobId: string, limit?: number) => Promise<WorkflowGraph>;
  /** the batches page */
  listBatches?: (params?: { beforeId?: string | undefined; limit?: number | undefined }) => Promise<BatchRow[]>;
  /** a batch's page: its members */
  batchMembers?: (params: { batchId: string; afterId?: string | undefined; limit?: number | undefined }) => Promise<WorkflowNode[]>;
};
