/**
 * leasehold/testing: test job handlers and the code that enqueues jobs without a database.
 *
 * ```ts
 * const t = createTestApp({ jobs: [sendEmail] });
 * await t.client.enqueue('send-email', { to: 'a@example.com' });
 * await t.runUntilIdle();
 * await expectEnqueued(t, 'send-email', { to: 'a@example.com' });
 * ```
 */
export { runJob } from './run-job.js';
export type { JobRun, RunJobOptions } from './run-job.js';
export { createTestApp } from './test-app.js';
export type { IdleReport, RunUntilIdleOptions, TestApp, TestAppOptions, TestClock } from './test-app.js';
export { expectEnqueued, expectNotEnqueued } from './expect.js';
export type { ExpectEnqueuedOptions, PayloadFields } from './expect.js';
