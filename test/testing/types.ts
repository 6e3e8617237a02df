/**
 * Compile-time tests of leasehold/testing's typing, checked by `npm run typecheck` (never run):
 * each `@ts-expect-error` line must fail to compile, so a typing that broke fails the typecheck.
 */
import { expectTypeOf } from 'expect-type';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { createTestApp, expectEnqueued, expectNotEnqueued, runJob, type JobRun } from '../../src/testing/index.js';

// the input has `subject` optional (a default), the handler gets it set
const sendEmail = defineJob({ type: 'send-email', schema: z.object({ to: z.string(), subject: z.string().default('hi') }), handler: () => {} });
const cleanup = defineJob({ type: 'cleanup', handler: (_p: { keepLast: number }) => {} });

export async function typed(): Promise<void> {
  // runJob takes what enqueue takes: the schema's input
  expectTypeOf(await runJob(sendEmail, { to: 'a@x' })).toEqualTypeOf<JobRun>();
  await runJob(cleanup, { keepLast: 3 });
  // @ts-expect-error a payload of the wrong shape
  await runJob(cleanup, { keepLast: 'three' });

  const t = createTestApp({ jobs: [sendEmail, cleanup], schedules: [{ name: 'nightly', type: 'cleanup', cron: '0 3 * * *', payload: { keepLast: 10 } }] });
  await t.client.enqueue('send-email', { to: 'a@x' });
  // @ts-expect-error the client is typed by the app's jobs: no such type
  await t.client.enqueue('send-mail', { to: 'a@x' });
  // @ts-expect-error a schedule names a type of the list
  createTestApp({ jobs: [cleanup], schedules: [{ name: 'x', type: 'nope', everyMs: 60_000 }] });

  await t.enqueued('cleanup');
  // @ts-expect-error no such type
  await t.enqueued('clean-up');
  // the payload fields are those enqueue takes, any subset of them
  await expectEnqueued(t, 'send-email', { subject: 'hi' });
  await expectEnqueued(t, 'cleanup');
  await expectNotEnqueued(t, 'cleanup', { keepLast: 3 });
  // @ts-expect-error no such type
  await expectEnqueued(t, 'send-mail', { to: 'a@x' });
  // @ts-expect-error not a field of the payload
  await expectEnqueued(t, 'send-email', { from: 'a@x' });
  // @ts-expect-error a field of the wrong type
  await expectNotEnqueued(t, 'cleanup', { keepLast: '3' });
}
