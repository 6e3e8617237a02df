/**
 * A worker's `schedules` are checked against its `jobs` at start, as `client.upsertSchedule`
 * checks them (the types are checked at compile time too: test/types/typed-jobs.ts): a type the
 * worker has no definition of, or a payload its schema refuses, throws a ValidationError before
 * any schedule is written or the worker registered.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { type ScheduleInput, UnknownJobTypeError, ValidationError } from '../../src/core/index.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Worker } from '../../src/runtime/worker.js';
import { memoryStorage } from '../../src/storage/memory/index.js';
import { LogCapture } from './support.js';

const report = defineJob({ type: 'report', schema: z.object({ day: z.string() }), handler: () => undefined });

async function started(schedules: readonly ScheduleInput[]) {
  const storage = memoryStorage();
  await storage.migrate();
  // schedules a typed list would refuse to compile: the run-time check is what is under test
  const worker = new Worker({ storage, jobs: [report] as const, sweeper: false, logger: new LogCapture().logger, schedules: schedules as never });
  const result = await worker.start().then(() => null, (e: unknown) => e);
  await worker.stop({ deadlineMs: 100 });
  const written = { schedules: await storage.schedules.list(), workers: await storage.workers.list() };
  await storage.close();
  return { result, written };
}

describe("Worker: schedules checked against the worker's jobs at start", () => {
  it('a schedule of a type the worker has no definition of: UnknownJobTypeError, nothing written', async () => {
    const { result, written } = await started([{ name: 'r', everyMs: 60_000, type: 'report', payload: { day: 'x' } }, { name: 'n', everyMs: 60_000, type: 'nope' }]);
    assert.ok(result instanceof UnknownJobTypeError && /nope/.test(result.message), String(result));
    assert.deepEqual(written, { schedules: [], workers: [] });
  });

  it("a payload the type's schema refuses: PAYLOAD_SCHEMA, nothing written", async () => {
    const { result, written } = await started([{ name: 'r', everyMs: 60_000, type: 'report', payload: { day: 1 } }]);
    assert.ok(result instanceof ValidationError && result.code === 'PAYLOAD_SCHEMA' && /day/.test(result.message), String(result));
    assert.deepEqual(written, { schedules: [], workers: [] });
  });

  it('good schedules are synced', async () => {
    const { result, written } = await started([{ name: 'r', everyMs: 60_000, type: 'report', payload: { day: 'x' } }]);
    assert.equal(result, null);
    assert.deepEqual(written.schedules.map((s) => [s.name, s.type, s.payload]), [['r', 'report', { day: 'x' }]]);
  });
});
