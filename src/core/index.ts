/**
 * Everything core holds, for the runtime and the adapters inside this package. Not the public
 * API: an application imports the root export (src/index.ts), an adapter leasehold/storage.
 */
export * from './alerts.js';
export * from './claim-size.js';
export * from './decide.js';
export * from './effects.js';
export * from './errors.js';
export * from './flow.js';
export * from './job-input.js';
export * from './lease.js';
export * from './limits.js';
export * from './outcome.js';
export * from './results.js';
export * from './retry.js';
export * from './schedules.js';
export * from './slots.js';
export * from './batches.js';
export * from './status.js';
export * from './workflow-graph.js';
export type * from './storage.js';
