/** runJob and workflows: the stored result, each ctx.progress call as stored, and ctx.parents() from the options. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ValidationError, defineJob } from '../../src/index.js';
import { runJob } from '../../src/testing/index.js';

test('runJob gives the result as stored, every progress report, and the parents it was given', async () => {
  const def = defineJob({
    type: 'report',
    handler: async (p: { rows: number }, ctx) => {
      ctx.progress(1, 'started');
      ctx.progress({ done: p.rows });
      const parents = await ctx.parents();
      return { rows: p.rows, at: new Date(0), from: parents.map((x) => x.result) };
    },
  });
  const run = await runJob(def, { rows: 3 }, { parents: [{ id: '7', type: 'fetch', result: { file: 'a.csv' } }] });
  assert.equal(run.status, 'succeeded');
  assert.deepEqual(run.result, { rows: 3, at: '1970-01-01T00:00:00.000Z', from: [{ file: 'a.csv' }] });
  assert.deepEqual(run.progress, [{ value: 1, note: 'started' }, { value: { done: 3 }, note: null }]);
  assert.deepEqual((await runJob(def, { rows: 0 })).result, { rows: 0, at: '1970-01-01T00:00:00.000Z', from: [] });
});

test('runJob: a result too large is the dead outcome the worker records; a bad progress value throws at the call', async () => {
  const big = defineJob({ type: 'big', handler: () => 'x'.repeat(70_000) });
  const run = await runJob(big, {});
  assert.equal(run.status, 'dead');
  assert.equal(run.errorInfo?.code, 'RESULT_TOO_LARGE');
  assert.equal(run.result, undefined);
  const bad = defineJob({ type: 'bad', handler: (_p: unknown, ctx) => ctx.progress(10n) });
  const r = await runJob(bad, {});
  assert.equal(r.status, 'failed');
  assert.ok(r.error instanceof ValidationError);
});
