export * from './decide.js';
export * from './errors.js';
export * from './job-input.js';
export * from './lease.js';
export * from './outcome.js';
export * from './retry.js';
export * from './status.js';
export type * from './storage.js';
