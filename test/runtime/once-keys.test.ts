/**
 * ctx.once refuses a key no database could store as itself (empty, NUL, a lone surrogate, too
 * long) with the same ValidationError everywhere, before fn runs and before anything is written.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { defineJob } from '../../src/runtime/job-definition.js';
import { type EdgeKind, edgeSkip, openEdge } from './edge-kinds.js';
import type { Harness } from './support.js';

const BAD_KEYS: [string, string][] = [
  ['empty', ''],
  ['NUL', 'a\u0000b'],
  ['lone surrogate', 'k\ud800'],
  ['too long', 'x'.repeat(513)],
];

for (const kind of ['memory', 'sqlite', 'postgres', 'mysql'] as EdgeKind[]) {
  const suite = `ctx.once keys (${kind})`;
  const skip = await edgeSkip(kind, suite);
  describe(suite, { skip }, () => {
    let h: Harness;
    let close: () => Promise<void>;
    before(async () => {
      ({ h, close } = await openEdge(kind));
    });
    after(() => close());

    test('a bad key is a ValidationError; fn does not run and no effect is written', async () => {
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
      assert.deepEqual(await h.storage.listEffects({ jobId: job.id, limit: 10 }), []);
    });
  });
}
