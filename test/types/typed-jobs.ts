/**
 * Compile-time tests of typed jobs, checked by `npm run typecheck` (never run). Each
 * `@ts-expect-error` line must fail to compile: if the typing it pins broke, the directive is
 * unused and the typecheck fails. `expectTypeOf` pins the types that must be inferred.
 */
import { type } from 'arktype';
import { expectTypeOf } from 'expect-type';
import * as v from 'valibot';
import { z } from 'zod';
import { type Client, type EnqueuedJob, type JobContext, type ScheduleFor, type Storage, Worker, createClient, defineJob } from '../../src/index.js';

declare const storage: Storage;

// zod: the input has `priority` optional (a default), the handler's payload has it set.
const sendEmail = defineJob({
  type: 'send-email',
  schema: z.object({ to: z.string().email(), priority: z.number().int().default(0) }),
  handler: (payload, ctx) => {
    expectTypeOf(payload).toEqualTypeOf<{ to: string; priority: number }>();
    expectTypeOf(ctx).toEqualTypeOf<JobContext>();
    expectTypeOf(ctx.job.id).toEqualTypeOf<string>();
  },
});
// valibot: a transform — the input is a string, the handler gets a number.
const resize = defineJob({
  type: 'resize',
  schema: v.object({ imageId: v.string(), width: v.pipe(v.string(), v.transform(Number)) }),
  handler: (payload) => expectTypeOf(payload).toEqualTypeOf<{ imageId: string; width: number }>(),
});
// arktype
const report = defineJob({
  type: 'report',
  schema: type({ day: 'string', 'tenant?': 'string' }),
  handler: (payload) => expectTypeOf(payload).toEqualTypeOf<{ day: string; tenant?: string }>(),
});
// no schema: the handler's parameter is the payload type
const cleanup = defineJob({ type: 'cleanup', handler: (p: { keepLast?: number }) => p.keepLast });

expectTypeOf(sendEmail.type).toEqualTypeOf<'send-email'>();

// a handler that declares another payload than its schema gives is refused
// @ts-expect-error the schema outputs { day: string }, the handler wants a number
defineJob({ type: 'mismatch', schema: z.object({ day: z.string() }), handler: (p: { day: number }) => p });

const jobs = [sendEmail, resize, report, cleanup];
const client = createClient({ storage, jobs });
new Worker({ storage, jobs });

// a worker's schedules: typed from its `jobs` as the client's are
new Worker({
  storage,
  jobs,
  schedules: [
    { name: 'nightly-report', cron: '0 2 * * *', type: 'report', payload: { day: 'today' } },
    { name: 'cleanup', everyMs: 60_000, type: 'cleanup' },
  ],
});
// @ts-expect-error not a type of the worker's list
new Worker({ storage, jobs, schedules: [{ name: 'x', everyMs: 60_000, type: 'nope' }] });
// @ts-expect-error the payload of another type
new Worker({ storage, jobs, schedules: [{ name: 'r', everyMs: 60_000, type: 'report', payload: { to: 'a@example.com' } }] });
// @ts-expect-error report needs a day: the default payload {} is not one
new Worker({ storage, jobs: [report], schedules: [{ name: 'r', everyMs: 60_000, type: 'report' }] });
// @ts-expect-error `width` is the schema's input: a string
new Worker({ storage, jobs: [resize], schedules: [{ name: 'w', everyMs: 60_000, type: 'resize', payload: { imageId: 'i', width: 640 } }] });
// a worker of one list is a `Worker` (what a function taking any worker wants)
const anyWorker: Worker = new Worker({ storage, jobs: [report] });
void anyWorker;

// enqueue: the type names and each type's schema input
void client.enqueue('send-email', { to: 'a@example.com' });
void client.enqueue('send-email', { to: 'a@example.com', priority: 2 }, { delayMs: 1_000 });
void client.enqueue('resize', { imageId: 'i1', width: '640' });
void client.enqueue('report', { day: '2030-01-01' });
void client.enqueue('cleanup', {});
// @ts-expect-error not a type of the list
void client.enqueue('send-emial', { to: 'a@example.com' });
// @ts-expect-error `to` is required
void client.enqueue('send-email', {});
// @ts-expect-error `to` is a string
void client.enqueue('send-email', { to: 1 });
// @ts-expect-error an unknown field
void client.enqueue('send-email', { to: 'a@example.com', cc: 'b@example.com' });
// @ts-expect-error the schema's input is a string (its output is the number)
void client.enqueue('resize', { imageId: 'i1', width: 640 });
// @ts-expect-error arktype: day is a string
void client.enqueue('report', { day: 20300101 });
// @ts-expect-error without a schema, the handler's parameter is the payload type
void client.enqueue('cleanup', { keepLast: 'all' });
// @ts-expect-error options are checked too
void client.enqueue('cleanup', {}, { delay: 5 });

// enqueueSync (inside a synchronous transaction): typed as enqueue, `tx` required, answers at once
declare const db: unknown;
expectTypeOf(client.enqueueSync('send-email', { to: 'a@example.com' }, { tx: db })).toEqualTypeOf<EnqueuedJob>();
// @ts-expect-error not a type of the list
client.enqueueSync('send-emial', { to: 'a@example.com' }, { tx: db });
// @ts-expect-error `to` is a string
client.enqueueSync('send-email', { to: 1 }, { tx: db });
// @ts-expect-error `tx` is required: it writes only in your transaction
client.enqueueSync('cleanup', {}, {});

// enqueueMany: each item's payload is its own type's
void client.enqueueMany([
  { type: 'send-email', payload: { to: 'a@example.com' } },
  { type: 'resize', payload: { imageId: 'i1', width: '1' }, options: { priority: 1 } },
]);
void client.enqueueMany([
  { type: 'send-email', payload: { to: 'a@example.com' } },
  // @ts-expect-error resize's payload under send-email's type
  { type: 'send-email', payload: { imageId: 'i1', width: '1' } },
]);
// @ts-expect-error not a type of the list
void client.enqueueMany([{ type: 'nope', payload: {} }]);

// schedules: type and payload from the list; the payload may be left out only where `{}` is one
void client.upsertSchedule({ name: 'nightly-report', cron: '0 2 * * *', type: 'report', payload: { day: 'today' } });
void client.upsertSchedule({ name: 'cleanup', everyMs: 60_000, type: 'cleanup' });
void client.syncSchedules([
  { name: 'cleanup', everyMs: 60_000, type: 'cleanup', payload: { keepLast: 10 } },
  { name: 'digest', cron: '0 8 * * 1', timezone: 'Europe/Warsaw', type: 'send-email', payload: { to: 'team@example.com' } },
]);
// @ts-expect-error report needs a day: the default payload {} is not one
void client.upsertSchedule({ name: 'r', everyMs: 60_000, type: 'report' });
// @ts-expect-error not a type of the list
void client.upsertSchedule({ name: 'x', everyMs: 60_000, type: 'nope' });
// @ts-expect-error the payload of another type
void client.syncSchedules([{ name: 'r', everyMs: 60_000, type: 'report', payload: { to: 'a@example.com' } }]);
expectTypeOf<ScheduleFor<typeof jobs>>().toHaveProperty('type').toEqualTypeOf<'send-email' | 'resize' | 'report' | 'cleanup'>();

// a client without a list takes any type and payload (workers elsewhere know them)
const loose = createClient({ storage });
void loose.enqueue('anything', { any: ['json'] });
void loose.upsertSchedule({ name: 'x', everyMs: 60_000, type: 'anything' });

// a bare `Client` takes a client of any list
const any: Client = client;
void any;
expectTypeOf(client).not.toEqualTypeOf<Client>();
