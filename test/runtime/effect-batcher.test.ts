/**
 * The worker's batched effect-ledger writes (`ctx.once`): calls of one tick and calls made while
 * a write is in flight share a write; a key already in a batch waits for the next; each caller
 * gets its own item's answer; a refused batch is asked again item by item, so only the refused
 * item fails; an adapter without batched calls gets one call per effect. And a
 * worker whose every job calls `ctx.once` runs each effect exactly once with far fewer writes
 * than jobs.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { EffectParams, EffectReservation, Storage } from '../../src/core/storage.js';
import type { EffectRecord } from '../../src/core/storage.js';
import { EffectBatcher } from '../../src/runtime/effect-batcher.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Harness, STORAGE_KINDS, deferred, describeEachKind, overriding, waitFor } from './support.js';

/**
 * A storage stand-in that records each batch and answers when released: every item gets an
 * answer of its own (`via` batch or single, and its key), so a result handed to the wrong
 * caller shows. A batch holding a key of `refused` fails as a whole; a single call fails for
 * that key alone, as a database refusing one item would.
 */
function recordingLedger(opts: { batched: boolean; refused?: string[] }) {
  const reserveBatches: string[][] = [];
  const recordBatches: string[][] = [];
  const singles: string[] = [];
  const refused = new Set(opts.refused ?? []);
  let gate = deferred();
  const refuse = (keys: string[]) => {
    const bad = keys.find((k) => refused.has(k));
    if (bad !== undefined) throw new Error(`refused ${bad}`);
  };
  const batch = async <T>(keys: string[], into: string[][], answer: (key: string) => T): Promise<T[]> => {
    into.push(keys);
    await gate.promise;
    refuse(keys);
    return keys.map(answer);
  };
  const single = async <T>(key: string, answer: (key: string) => T): Promise<T> => {
    singles.push(key);
    refuse([key]);
    return answer(key);
  };
  const reservation = (via: string) => (key: string): EffectReservation => ({ state: 'done', result: `${via}:${key}` });
  // a record lands unless its key says otherwise
  const recorded = (key: string): boolean => !key.startsWith('lost');
  const effects = {
    reserve: (p: EffectParams) => single(p.key, reservation('single')),
    complete: (p: EffectRecord) => single(p.key, recorded),
    ...(opts.batched
      ? {
          reserveMany: ({ items }: { items: readonly EffectParams[] }) => batch(items.map((p) => p.key), reserveBatches, reservation('batch')),
          completeMany: ({ items }: { items: readonly EffectRecord[] }) => batch(items.map((p) => p.key), recordBatches, recorded),
        }
      : {}),
  };
  const storage = { effects } as unknown as Storage;
  return {
    storage,
    reserveBatches,
    recordBatches,
    singles,
    release() {
      gate.resolve();
      gate = deferred();
    },
  };
}

const done = (via: string, key: string): EffectReservation => ({ state: 'done', result: `${via}:${key}` });
const ask = (key: string, jobId = '1'): EffectParams => ({ key, jobId, leaseToken: 't' });
const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('EffectBatcher', () => {
  test('one tick is one write; calls made while it is in flight share the next; a repeated key waits for a later batch', async () => {
    const l = recordingLedger({ batched: true });
    const b = new EffectBatcher(l.storage);
    const first = [b.reserve(ask('a')), b.reserve(ask('b')), b.reserve(ask('a', '2'))];
    await turn();
    // the first write holds a and b; the second a (the key repeated) in flight beside it
    assert.deepEqual(l.reserveBatches, [['a', 'b'], ['a']]);
    const later = [b.reserve(ask('c')), b.reserve(ask('d')), b.reserve(ask('c', '3'))];
    await turn();
    assert.equal(l.reserveBatches.length, 2, 'two writes in flight at most: the rest waits');
    l.release();
    assert.deepEqual(await Promise.all(first), [done('batch', 'a'), done('batch', 'b'), done('batch', 'a')]);
    await waitFor(() => l.reserveBatches.length === 4, 1_000, 'the waiting calls to be written');
    assert.deepEqual(l.reserveBatches.slice(2), [['c', 'd'], ['c']]);
    l.release();
    assert.deepEqual(await Promise.all(later), [done('batch', 'c'), done('batch', 'd'), done('batch', 'c')]);
    assert.deepEqual(l.singles, [], 'nothing asked one by one');
  });

  test('records are batched the same way, apart from reserves', async () => {
    const l = recordingLedger({ batched: true });
    const b = new EffectBatcher(l.storage);
    const all = [b.record({ ...ask('a'), result: 1 }), b.record({ ...ask('lost-b'), result: 2 }), b.record({ ...ask('c'), result: 3 }), b.reserve(ask('d'))];
    await turn();
    assert.deepEqual(l.recordBatches, [['a', 'lost-b', 'c']]);
    assert.deepEqual(l.reserveBatches, [['d']]);
    l.release();
    assert.deepEqual(await Promise.all(all), [true, false, true, done('batch', 'd')]);
  });

  test('a batch the database refuses is asked again item by item: only the refused item fails', async () => {
    const l = recordingLedger({ batched: true, refused: ['bad'] });
    const b = new EffectBatcher(l.storage);
    const asked = [b.reserve(ask('a')), b.reserve(ask('bad')), b.reserve(ask('c'))];
    await turn();
    l.release();
    const [a, bad, c] = await Promise.allSettled(asked);
    assert.deepEqual(a, { status: 'fulfilled', value: done('single', 'a') });
    assert.equal(bad?.status, 'rejected');
    assert.match(String((bad as PromiseRejectedResult).reason), /refused bad/);
    assert.deepEqual(c, { status: 'fulfilled', value: done('single', 'c') });
    assert.deepEqual(l.singles.sort(), ['a', 'bad', 'c']);
    // and the next batch is written as a batch again
    const next = b.reserve(ask('e'));
    await turn();
    l.release();
    assert.deepEqual(await next, done('batch', 'e'));
  });

  test('a record asked alone after its batch failed and finding nothing pending fails with the batch error: that batch may have landed', async () => {
    // "false" here would read as a lost lease; the error makes once retry and ask the ledger
    const dropped = new Error('connection dropped after COMMIT');
    const storage = {
      effects: {
        complete: async () => false,
        completeMany: async () => {
          throw dropped;
        },
        reserveMany: async ({ items }: { items: readonly EffectParams[] }) => items.map(() => ({ state: 'reserved' })),
      },
    } as unknown as Storage;
    const b = new EffectBatcher(storage);
    await assert.rejects(b.record({ ...ask('a'), result: 1 }), (e) => e === dropped);
  });

  test('an adapter without batched calls is asked one effect at a time', async () => {
    const l = recordingLedger({ batched: false });
    const b = new EffectBatcher(l.storage);
    assert.deepEqual(await Promise.all([b.reserve(ask('a')), b.record({ ...ask('lost-b'), result: null })]), [done('single', 'a'), false]);
    assert.deepEqual(l.singles, ['a', 'lost-b']);
  });
});

await describeEachKind('ctx.once under concurrency, batched', STORAGE_KINDS, (kind) => {
  const harnesses: Harness[] = [];
  after(async () => {
    for (const h of harnesses) await h.close();
  });

  test('200 jobs each calling ctx.once at concurrency 20: every effect once, in far fewer writes than jobs', async () => {
    const h = await Harness.open(kind);
    harnesses.push(h);
    const writes = { reserve: 0, record: 0 };
    const reserving = overriding(h.storage, 'effects', 'reserveMany', (many) => (p) => (writes.reserve++, many!(p)));
    const s = overriding(reserving, 'effects', 'completeMany', (many) => (p) => (writes.record++, many!(p)));
    const sent = new Map<number, number>();
    const job = defineJob({
      type: 'notify',
      handler: async (p: { n: number }, ctx) => {
        await ctx.once(`notify-${p.n}`, () => sent.set(p.n, (sent.get(p.n) ?? 0) + 1).size);
      },
    });
    h.storage = s;
    const { client } = await h.serve([job], { concurrency: 20 });
    const n = 200;
    await client.enqueueMany(Array.from({ length: n }, (_, i) => ({ type: 'notify', payload: { n: i } })));
    await waitFor(async () => (await h.storage.queues.counts()).reduce((a, c) => a + (c.status === 'succeeded' ? c.count : 0), 0) === n, 10_000, 'every job to succeed');
    assert.equal(sent.size, n);
    assert.ok([...sent.values()].every((x) => x === 1), 'each effect ran once');
    assert.equal((await h.storage.effects.list({ limit: 1_000 })).filter((e) => e.state === 'done').length, n);
    // one write per job would be n each; concurrent attempts share them
    assert.ok(writes.reserve > 0 && writes.reserve <= n / 2, `reserves in ${writes.reserve} writes for ${n} jobs`);
    assert.ok(writes.record > 0 && writes.record <= n / 2, `records in ${writes.record} writes for ${n} jobs`);
  });
});
