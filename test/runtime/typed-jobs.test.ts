/**
 * Typed jobs at run time, through the root export, with zod, valibot and arktype schemas: a
 * client made from the definitions validates each payload (and each schedule's) against its
 * type's Standard Schema before anything is written — a ValidationError, nothing stored — and
 * the handler gets the schema's output, transforms included. The compile-time side is in
 * test/types/typed-jobs.ts.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type } from 'arktype';
import * as v from 'valibot';
import { z } from 'zod';
import { type AnyJobDefinition, ValidationError, Worker, createClient, defineJob } from '../../src/index.js';
import { Harness, describeEachKind } from './support.js';

/** The three job types, each recording what its handler got into `seen` (by type). */
function typedJobs(seen: Map<string, unknown[]>) {
  const record = (type: string) => (payload: unknown) => void seen.set(type, [...(seen.get(type) ?? []), payload]);
  // zod: a default and a string → Date transform (its output is no JSON: it is never stored)
  const email = defineJob({
    type: 'email',
    schema: z.object({ to: z.string().email(), at: z.string().datetime().transform((s) => new Date(s)), priority: z.number().int().default(3) }),
    handler: (p) => record('email')({ ...p, at: p.at.toISOString(), isDate: p.at instanceof Date }),
  });
  // valibot: a string → number transform, and an asynchronous check
  const resize = defineJob({
    type: 'resize',
    schema: v.pipeAsync(
      v.objectAsync({ imageId: v.string(), width: v.pipe(v.string(), v.regex(/^\d+$/), v.transform(Number)) }),
      v.checkAsync(async (p) => p.imageId !== 'missing', 'no such image'),
    ),
    handler: record('resize'),
  });
  // arktype: a morph (trimmed) and an optional field
  const report = defineJob({
    type: 'report',
    schema: type({ day: 'string.date.iso', 'tenant?': type('string').pipe((s) => s.trim()) }),
    handler: record('report'),
  });
  return [email, resize, report];
}

function isValidation(code: string, message: RegExp) {
  return (e: unknown) => {
    assert.ok(e instanceof ValidationError, `expected a ValidationError, got ${String(e)}`);
    assert.equal(e.code, code);
    assert.match(e.message, message);
    return true;
  };
}

await describeEachKind('typed jobs: Standard Schema validation at enqueue', ['memory', 'sqlite'], (kind) => {
  let h: Harness;
  const seen = new Map<string, unknown[]>();
  const jobs = typedJobs(seen);
  before(async () => {
    h = await Harness.open(kind);
  });
  after(() => h.close());

  test('each library: a bad payload is a PAYLOAD_SCHEMA ValidationError naming the field, and writes nothing', async () => {
    const client = createClient({ storage: h.storage, jobs });
    const bad: [() => Promise<unknown>, RegExp][] = [
      [() => client.enqueue('email', { to: 'not an address', at: '2030-01-01T00:00:00Z' }), /email.*to:/],
      [() => client.enqueue('email', { to: 'a@example.com', at: 'tomorrow' }), /email.*at:/],
      [() => client.enqueue('resize', { imageId: 'i1', width: 'wide' }), /resize.*width:/],
      [() => client.enqueue('resize', { imageId: 'missing', width: '10' }), /resize.*no such image/],
      [() => client.enqueue('report', { day: 'someday' }), /report.*day/],
      [() => client.enqueue('report', { day: '2030-01-01', tenant: 7 } as never), /report.*tenant/],
    ];
    for (const [enqueue, message] of bad) await assert.rejects(enqueue, isValidation('PAYLOAD_SCHEMA', message));
    await assert.rejects(
      client.enqueueMany([
        { type: 'email', payload: { to: 'a@example.com', at: '2030-01-01T00:00:00Z' } },
        { type: 'resize', payload: { imageId: 'i1', width: '-1' } },
      ]),
      isValidation('PAYLOAD_SCHEMA', /resize.*width/),
    );
    assert.equal(await h.totalJobs(), 0, 'nothing was written');
  });

  test("each library: the payload is stored as given and the handler gets the schema's output", async () => {
    const client = createClient({ storage: h.storage, jobs });
    const [a, b, c] = await client.enqueueMany([
      { type: 'email', payload: { to: 'a@example.com', at: '2030-01-01T00:00:00Z' } },
      { type: 'resize', payload: { imageId: 'i1', width: '640' } },
      { type: 'report', payload: { day: '2030-01-01', tenant: '  acme ' } },
    ]);
    assert.deepEqual([a?.payload, b?.payload, c?.payload], [
      { to: 'a@example.com', at: '2030-01-01T00:00:00Z' },
      { imageId: 'i1', width: '640' },
      { day: '2030-01-01', tenant: '  acme ' },
    ]);
    const report = await new Worker({ storage: h.storage, jobs, logger: h.log.logger, pollIntervalMs: 20 }).drain({ maxMs: 30_000 });
    assert.deepEqual(report.outcomes, { succeeded: 3 });
    assert.deepEqual(seen.get('email'), [{ to: 'a@example.com', at: '2030-01-01T00:00:00.000Z', priority: 3, isDate: true }]);
    assert.deepEqual(seen.get('resize'), [{ imageId: 'i1', width: 640 }]);
    assert.deepEqual(seen.get('report'), [{ day: '2030-01-01', tenant: 'acme' }]);
  });

  test("schedules: the type must be the client's and the payload one its schema takes; nothing written otherwise", async () => {
    const client = createClient({ storage: h.storage, jobs });
    // the same definitions, typed as any list's: the type name is checked at run time
    const loose = createClient({ storage: h.storage, jobs: jobs as readonly AnyJobDefinition[] });
    await assert.rejects(client.upsertSchedule({ name: 'r1', everyMs: 60_000, type: 'report', payload: { day: 'someday' } }), isValidation('PAYLOAD_SCHEMA', /report.*day/));
    await assert.rejects(loose.upsertSchedule({ name: 'r2', everyMs: 60_000, type: 'reprot' }), isValidation('UNKNOWN_JOB_TYPE', /reprot/));
    await assert.rejects(
      client.syncSchedules([
        { name: 'ok', everyMs: 60_000, type: 'resize', payload: { imageId: 'i1', width: '10' } },
        { name: 'bad', everyMs: 60_000, type: 'resize', payload: { imageId: 'missing', width: '10' } },
      ]),
      isValidation('PAYLOAD_SCHEMA', /no such image/),
    );
    assert.deepEqual(await client.listSchedules(), [], 'no schedule written');
    const row = await client.upsertSchedule({ name: 'nightly', cron: '0 2 * * *', type: 'report', payload: { day: '2030-01-01', tenant: ' t ' } });
    assert.deepEqual([row.type, row.payload, row.source], ['report', { day: '2030-01-01', tenant: ' t ' }, 'cli']);
    const synced = await client.syncSchedules([{ name: 'thumbs', everyMs: 60_000, type: 'resize', payload: { imageId: 'i1', width: '10' } }]);
    assert.deepEqual(synced.schedules.map((s) => [s.name, s.source]), [['thumbs', 'code']]);
    assert.deepEqual((await client.listSchedules()).map((s) => s.name).sort(), ['nightly', 'thumbs']);
  });
});
