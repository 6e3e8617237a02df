/**
 * runtime/bulk.ts on every storage: a bulk action runs range by range and batch by batch to the
 * newest job there was when it started, under one bulk id; the preview counts what it then
 * changes; `max` and the signal stop it (done: false); a job enqueued during it is left alone;
 * this process's workers hear of retried and cancelled jobs; bad input fails before any write.
 * runtime/operator-jobs.ts records who retried or cancelled one job.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { InvalidStateError, ValidationError } from '../../src/core/errors.js';
import type { NewJob, Storage } from '../../src/core/storage.js';
import { previewBulk, runBulk } from '../../src/runtime/bulk.js';
import { LocalBus } from '../../src/runtime/env.js';
import { createClient } from '../../src/runtime/client.js';
import { API_OPERATOR, cancelJob, retryJob } from '../../src/runtime/operator-jobs.js';
import { describeEachHarness } from './support.js';

const BY = { actor: 'dashboard:ops', source: '127.0.0.1' };
let n = 0;
const uniq = (p: string): string => `${p}-${++n}-${Math.random().toString(36).slice(2, 7)}`;

function job(type: string, over: Partial<NewJob> = {}): NewJob {
  return { queue: 'default', type, payload: {}, priority: 0, runAfterMs: 60_000, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000, ...over };
}

async function insert(s: Storage, type: string, count: number): Promise<string[]> {
  return (await s.jobs.insert({ jobs: Array.from({ length: count }, () => job(type)) })).map((r) => r.job.id);
}

await describeEachHarness('runtime bulk actions', (h) => {
  it('cancel: every matching job, over ranges of a few ids and small batches, one bulk id; the preview counted them first', async () => {
    const s = h().storage;
    const type = uniq('bulk-cancel');
    const ids = await insert(s, type, 23);
    await insert(s, uniq('other'), 5);
    assert.deepEqual(await previewBulk(s, { action: 'cancel', filter: { type } }), { count: 23, exact: true });
    assert.deepEqual(await previewBulk(s, { action: 'cancel', filter: { type } }, 20), { count: 20, exact: false });
    const heard: string[] = [];
    const bus = LocalBus.for(s);
    const listen = (e: Event) => heard.push((e as CustomEvent<string>).detail);
    bus.addEventListener('cancelled', listen);
    const progress: number[] = [];
    const r = await runBulk(s, { action: 'cancel', filter: { type }, ...BY, batchSize: 4, rangeIds: 7, onProgress: (p) => void progress.push(p.changed) }).finally(() => bus.removeEventListener('cancelled', listen));
    assert.deepEqual([r.count, r.done], [23, true]);
    assert.deepEqual(r.ids, ids);
    assert.deepEqual(heard, ids, 'this process hears of every cancelled job');
    assert.ok(progress.length >= 6 && progress.at(-1) === 23, `progress ${progress.join(',')}`);
    for (const id of [ids[0]!, ids[22]!]) {
      const [e] = await s.jobs.events({ jobId: id });
      assert.deepEqual([e!.kind, e!.actor, e!.source, e!.detail.bulkId], ['cancelled', BY.actor, BY.source, r.bulkId]);
    }
    assert.deepEqual(await previewBulk(s, { action: 'cancel', filter: { type } }), { count: 0, exact: true });
    assert.deepEqual(await runBulk(s, { action: 'cancel', filter: { type }, ...BY, dryRun: true }).then((x) => [x.count, x.ids, x.done]), [0, [], true]);
  });

  it('max stops it with done false; a job enqueued during the action is left alone; the next run takes the rest', async () => {
    const s = h().storage;
    const type = uniq('bulk-max');
    const ids = await insert(s, type, 10);
    let late: string | undefined;
    const r = await runBulk(s, {
      action: 'delete', filter: { type }, ...BY, batchSize: 3, max: 7,
      onProgress: async () => {
        late ??= (await insert(s, type, 1))[0];
      },
    });
    assert.deepEqual([r.count, r.done, r.ids], [7, false, ids.slice(0, 7)]);
    const rest = await runBulk(s, { action: 'delete', filter: { type }, ...BY });
    assert.ok(late !== undefined);
    assert.deepEqual(rest.ids, [...ids.slice(7), late], 'the late job was there when this run started');
  });

  it('a filter the batches do not read (a type prefix, text) goes through jobs.search, page by page; the preview counts it per status', async () => {
    const s = h().storage;
    const prefix = uniq('pre');
    const ids = [...(await insert(s, `${prefix}.a`, 4)), ...(await insert(s, `${prefix}.b`, 3))];
    await insert(s, `x${prefix}`, 2);
    await s.jobs.cancel({ id: ids[1]! });
    assert.deepEqual(await previewBulk(s, { action: 'cancel', filter: { typePrefix: prefix } }), { count: 6, exact: true });
    assert.deepEqual(await previewBulk(s, { action: 'retry', filter: { typePrefix: prefix, status: 'cancelled' } }), { count: 1, exact: true });
    const r = await runBulk(s, { action: 'cancel', filter: { typePrefix: prefix }, ...BY, batchSize: 2 });
    assert.deepEqual([r.ids, r.done], [ids.filter((id) => id !== ids[1]), true]);
    const [e] = await s.jobs.events({ jobId: ids[6]! });
    assert.equal(e!.detail.bulkId, r.bulkId);
    await assert.rejects(runBulk(s, { action: 'cancel', filter: { typePrefix: 'a b' }, ...BY }), ValidationError);
    await assert.rejects(s.jobs.bulk({ action: 'cancel', filter: { typePrefix: prefix } as never, afterId: null, throughId: ids[6]!, limit: 10, bulkId: 'b', ...BY }), ValidationError, 'a batch never ignores a filter part');
  });

  it('a signal stops it between batches', async () => {
    const s = h().storage;
    const type = uniq('bulk-abort');
    await insert(s, type, 6);
    const stop = new AbortController();
    const r = await runBulk(s, { action: 'cancel', filter: { type }, ...BY, batchSize: 2, signal: stop.signal, onProgress: () => stop.abort() });
    assert.deepEqual([r.count, r.done], [2, false]);
  });

  it('retry wakes this process\'s workers; bad input is a ValidationError before anything is written', async () => {
    const s = h().storage;
    const type = uniq('bulk-retry');
    const ids = await insert(s, type, 3);
    let woken = 0;
    const bus = LocalBus.for(s);
    const wake = () => woken++;
    bus.addEventListener('enqueued', wake);
    const r = await runBulk(s, { action: 'retry', filter: { type }, ...BY }).finally(() => bus.removeEventListener('enqueued', wake));
    assert.deepEqual(r.ids, ids);
    assert.ok(woken >= 1);
    for (const bad of [{ actor: '' }, { batchSize: 0 }, { batchSize: 1001 }, { max: 0 }, { filter: { type: 'a b' } }, { action: 'purge' }]) {
      await assert.rejects(runBulk(s, { action: 'cancel', filter: { type }, ...BY, ...bad } as Parameters<typeof runBulk>[1]), ValidationError, JSON.stringify(bad));
    }
    for (const id of ids) assert.equal((await s.jobs.get({ id }))?.status, 'queued');
  });

  it('retryJob / cancelJob record who asked; a state the change does not apply to is an InvalidStateError', async () => {
    const s = h().storage;
    const [id] = await insert(s, uniq('one'), 1);
    await cancelJob(s, id!, BY);
    await assert.rejects(cancelJob(s, id!, BY), InvalidStateError);
    await retryJob(s, id!, { actor: 'cli:ops@host' });
    assert.deepEqual((await s.jobs.events({ jobId: id! })).map((e) => [e.kind, e.actor, e.source]), [['cancelled', BY.actor, BY.source], ['retried', 'cli:ops@host', null]]);
  });

  it("the client's retryNow / cancel are recorded as the API from this host, or as whom the caller names", async () => {
    const s = h().storage;
    const client = createClient({ storage: s });
    const [id] = await insert(s, uniq('api'), 1);
    await client.cancel(id!);
    await client.retryNow(id!, { actor: 'app:billing', source: 'worker-7' });
    assert.deepEqual((await s.jobs.events({ jobId: id! })).map((e) => [e.kind, e.actor, e.source]), [['cancelled', 'api', API_OPERATOR.source], ['retried', 'app:billing', 'worker-7']]);
  });
});
