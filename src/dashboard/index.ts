/**
 * The web dashboard: overview, jobs, job detail with every attempt, queues, schedules, locks
 * and workers; retry, cancel, pause, resume, schedule actions; live without a reload.
 * `createDashboard` returns a Hono app (mount it, or call its `fetch` from any server);
 * `serveDashboard` runs it standalone. See docs/dashboard.md.
 */
export { createDashboard } from './app.js';
export type { DashboardClient, DashboardOptions } from './app.js';
export { serveDashboard } from './serve.js';
export type { RunningDashboard, ServeDashboardOptions } from './serve.js';
export { withOperatorApi } from '../runtime/operator.js';
export type { OperatorApi } from '../runtime/operator.js';
