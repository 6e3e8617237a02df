/**
 * The web dashboard: overview, jobs, job detail with every attempt, queues, schedules, locks
 * and workers; retry, cancel, pause, resume, schedule actions; live without a reload.
 * `createDashboard` returns a Hono app (mount it, or call its `fetch` from any server);
 * `serveDashboard` runs it standalone. See docs/dashboard.md.
 */
export { createDashboard } from './app.js';
export type { DashboardClient, DashboardOptions } from './app.js';
export type { Env as DashboardEnv } from './context.js';
export { serveDashboard } from './serve.js';
export type { RunningDashboard, ServeDashboardOptions } from './serve.js';
export { withOperatorApi } from '../runtime/operator.js';
export type { OperatorApi } from '../runtime/operator.js';
export type { BulkOptions, BulkPreview, BulkRequest, BulkResult } from '../runtime/bulk.js';
export type { ChartQuery } from '../runtime/charts.js';
export type { FoundJobs } from '../runtime/job-search.js';
export type { AttemptChart, ChartBucket, Percentiles } from '../core/charts.js';
