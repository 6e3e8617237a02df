/**
 * ctx.once refuses a key no database could store as itself (empty, NUL, a lone surrogate, too
 * long) with the same ValidationError everywhere, before fn runs and before anything is written.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defineJob } from '../../src/runtime/job-definition.js';
import { describeEachHarness } from './support.js';

const BAD_KEYS: [string, string][] = [
  ['empty', ''],
  ['NUL', 'a\u0000b'],
  ['lone surrogate', 'k\ud800'],
  ['too long', 'x'.repeat(513)],
];

await describeEachHarness('ctx.once keys', (harness) => {
  test('a bad key is a ValidationError; fn does not run and no effect is written', async () => {
    const h = harness();
    const seen: Record<string, string | undefined> = {};
    let calls = 0;
    const def = defineJob({
      type: 'bad-keys',
      maxAttempts: 1,
      handler: async (_p, ctx) => {
        for (const [name, key] of BAD_KEYS) {
          try {
            await ctx.once(key, () => void calls++);
          } catch (e) {
            seen[name] = `${(e as Error).name}:${(e as { code?: string }).code}`;
          }
        }
      },
    });
    const { client } = await h.serve([def], { concurrency: 1 });
    const job = await client.enqueue('bad-keys', {});
    await h.waitStatus(job.id, 'succeeded');
    assert.equal(calls, 0);
    assert.deepEqual(seen, Object.fromEntries(BAD_KEYS.map(([name]) => [name, 'ValidationError:INVALID_OPTION'])));
    assert.deepEqual(await h.storage.effects.list({ jobId: job.id, limit: 10 }), []);
  });
});
