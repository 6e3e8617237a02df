/**
 * Running leasehold in production: Prometheus metrics (prom-client), liveness and readiness
 * checks, and the small server that exposes them. See docs/operations.md, "Metrics and health".
 */
export { createMetrics } from './metrics.js';
export type { Metrics, MetricsOptions, WorkerLike } from './metrics.js';
export { SAMPLER_LOCK } from './db-sampler.js';
export { createHealth } from './health.js';
export type { Health, HealthOptions, HealthReport } from './health.js';
export { createObserveApp, healthRoutes, metricsRoutes, serveObserve } from './server.js';
export type { ObserveEndpoints, RunningObserve, ServeObserveOptions } from './server.js';
