/**
 * A handler's return value stored as the job's result by the finish, and ctx.progress: checked
 * at the call, written fenced at most once per interval (the last report wins) and before the
 * attempt's outcome.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { RESULT_LIMIT_BYTES, ValidationError } from '../../src/core/index.js';
import type { ProgressParams } from '../../src/core/storage.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Harness, STORAGE_KINDS, deferred, describeEachKind, waitFor } from './support.js';

await describeEachKind('results and progress', STORAGE_KINDS, (kind) => {
  let h: Harness;
  before(async () => {
    h = await Harness.open(kind);
  });
  after(() => h.close());

  test("the handler's return value is the succeeded job's result; undefined and null leave none", async () => {
    const { client } = await h.serve([
      defineJob({ type: 'sum', handler: (p: { xs: number[] }) => ({ sum: p.xs.reduce((a, b) => a + b, 0), at: new Date(0) }) }),
      defineJob({ type: 'nothing', handler: (p: { null?: boolean }) => (p.null ? null : undefined) }),
    ]);
    const a = await client.enqueue('sum', { xs: [1, 2, 3] });
    const b = await client.enqueue('nothing', {});
    const c = await client.enqueue('nothing', { null: true });
    assert.deepEqual((await h.waitStatus(a.id, 'succeeded')).result, { sum: 6, at: '1970-01-01T00:00:00.000Z' });
    assert.equal('result' in (await h.waitStatus(b.id, 'succeeded')), false);
    assert.equal('result' in (await h.waitStatus(c.id, 'succeeded')), false);
  });

  test('a result over the limit or not JSON makes the job dead with the reason on its attempt; the worker goes on', async () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const { client } = await h.serve([
      defineJob({ type: 'big', maxAttempts: 3, handler: () => 'x'.repeat(RESULT_LIMIT_BYTES + 1) }),
      defineJob({ type: 'loop', handler: () => circular }),
      defineJob({ type: 'fine', handler: () => 'x'.repeat(RESULT_LIMIT_BYTES - 2) }),
    ]);
    const big = await client.enqueue('big', {});
    const loop = await client.enqueue('loop', {});
    const fine = await client.enqueue('fine', {});
    const dead = await h.waitStatus(big.id, 'dead');
    assert.equal(dead.lastErrorCode, 'RESULT_TOO_LARGE');
    assert.equal(dead.attempts, 1, 'not retried: the same work would return the same value');
    assert.equal('result' in dead, false);
    const [att] = await h.storage.attempts.list({ jobId: big.id });
    assert.equal(att?.errorCode, 'RESULT_TOO_LARGE');
    assert.match(att?.errorMessage ?? '', /limit is 65536/);
    assert.equal((await h.waitStatus(loop.id, 'dead')).lastErrorCode, 'INVALID_RESULT');
    assert.equal(((await h.waitStatus(fine.id, 'succeeded')).result as string).length, RESULT_LIMIT_BYTES - 2, 'a result at the limit is kept');
  });

  test('progress: the first report is written at once, later ones coalesce, and the last is written before the outcome', async () => {
    const writes: string[] = [];
    const store = h.storage.workflows as { progress: (p: ProgressParams) => Promise<boolean> };
    const original = store.progress.bind(store);
    store.progress = (p) => (writes.push(p.value), original(p));
    try {
      const release = deferred();
      const { client } = await h.serve([
        defineJob({
          type: 'steps',
          handler: async (_p: unknown, ctx) => {
            ctx.progress(1, 'one');
            ctx.progress(2);
            await release.promise;
            ctx.progress({ done: 3, of: 3 }, 'all done');
          },
        }),
      ], { progressIntervalMs: 600_000 });
      const job = await client.enqueue('steps', {});
      const running = await waitFor(async () => ((await h.job(job.id)).progress?.value === 1 ? h.job(job.id) : null), 5_000, 'the first report');
      assert.equal(running.status, 'running');
      assert.equal(running.progress?.note, 'one');
      release.resolve();
      const done = await h.waitStatus(job.id, 'succeeded');
      assert.deepEqual(done.progress?.value, { done: 3, of: 3 });
      assert.equal(done.progress?.note, 'all done');
      assert.deepEqual(writes, ['1', '{"done":3,"of":3}'], 'the report in between was replaced, never written');
    } finally {
      store.progress = original;
    }
  });

  test('ctx.progress refuses a value that is not JSON or too large, at the call', async () => {
    const seen: string[] = [];
    const { client } = await h.serve([
      defineJob({
        type: 'bad-progress',
        handler: (_p: unknown, ctx) => {
          for (const v of [() => 1, 10n, 'y'.repeat(5_000)]) {
            try {
              ctx.progress(v);
            } catch (e) {
              if (e instanceof ValidationError) seen.push(e.code);
            }
          }
        },
      }),
    ]);
    const job = await client.enqueue('bad-progress', {});
    const done = await h.waitStatus(job.id, 'succeeded');
    assert.deepEqual(seen, ['INVALID_PROGRESS', 'INVALID_PROGRESS', 'INVALID_PROGRESS']);
    assert.equal('progress' in done, false);
  });
});
