/**
 * client.enqueueFlow with running workers: a diamond runs parents first (checked from the attempt
 * history: no child started before its parents finished), a bad graph or item writes nothing, a
 * parent that dies cancels or holds what waits for it.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PermanentFailure, ValidationError } from '../../src/core/index.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Harness, STORAGE_KINDS, describeEachKind } from './support.js';

const step = defineJob({ type: 'wf-step', handler: (p: { name: string; fail?: boolean }) => {
  if (p.fail) throw new PermanentFailure(`${p.name} broke`);
  return { done: p.name };
} });

await describeEachKind('client.enqueueFlow', STORAGE_KINDS, (kind) => {
  let h: Harness;
  before(async () => {
    h = await Harness.open(kind);
  });
  after(() => h.close());

  test('a diamond: no job starts before every job it depends on has finished; each keeps its result', async () => {
    const { client } = await h.serve([step], { concurrency: 4 });
    const s = (name: string, dependsOn: string[] = []) => ({ key: name, type: 'wf-step' as const, payload: { name }, dependsOn });
    const jobs = await client.enqueueFlow([s('join', ['left', 'right']), s('left', ['root']), s('right', ['root']), s('root')]);
    assert.deepEqual(Object.fromEntries(Object.entries(jobs).map(([k, j]) => [k, j.status])), { join: 'waiting', left: 'waiting', right: 'waiting', root: 'queued' });
    const done = await h.waitStatus(jobs.join!.id, 'succeeded', 10_000);
    assert.deepEqual(done.result, { done: 'join' });
    const started = async (k: string) => (await h.storage.attempts.list({ jobId: jobs[k]!.id }))[0]!.startedAt.getTime();
    const finished = async (k: string) => (await h.job(jobs[k]!.id)).finishedAt!.getTime();
    for (const [child, parents] of [['left', ['root']], ['right', ['root']], ['join', ['left', 'right']]] as const) {
      for (const p of parents) assert.ok((await started(child)) >= (await finished(p)), `${child} started after ${p} finished`);
    }
  });

  test("ctx.parents(): a child reads the results of the jobs it ran after; a job outside a workflow has none", async () => {
    const gather = defineJob({ type: 'wf-gather', handler: async (_p: unknown, ctx) => (await ctx.parents()).map((p) => [p.type, p.result]) });
    const { client } = await h.serve([step, gather]);
    const jobs = await client.enqueueFlow([
      { key: 'a', type: 'wf-step', payload: { name: 'a' } },
      { key: 'b', type: 'wf-step', payload: { name: 'b' } },
      { key: 'sum', type: 'wf-gather', payload: {}, dependsOn: ['b', 'a'] },
    ]);
    const done = await h.waitStatus(jobs.sum!.id, 'succeeded', 10_000);
    assert.deepEqual(done.result, [['wf-step', { done: 'a' }], ['wf-step', { done: 'b' }]], 'in id order, with their results');
    const alone = await client.enqueue('wf-gather', {});
    assert.deepEqual((await h.waitStatus(alone.id, 'succeeded')).result, []);
  });

  test('a stored job as a parent: the child runs after it succeeded and reads its result', async () => {
    const gather = defineJob({ type: 'wf-gather2', handler: async (_p: unknown, ctx) => (await ctx.parents()).map((p) => [p.type, p.result]) });
    // no worker yet: the parent is still queued when the child is enqueued
    const early = h.clientWith([step, gather]);
    const first = await early.enqueue('wf-step', { name: 'first' });
    const jobs = await early.enqueueFlow([{ key: 'sum', type: 'wf-gather2', payload: {}, dependsOn: [{ jobId: first.id }] }]);
    assert.equal(jobs.sum!.status, 'waiting');
    const { client } = await h.serve([step, gather]);
    const done = await h.waitStatus(jobs.sum!.id, 'succeeded', 10_000);
    assert.deepEqual(done.result, [['wf-step', { done: 'first' }]]);
    const after = await client.enqueueFlow([{ key: 'again', type: 'wf-gather2', payload: {}, dependsOn: [{ jobId: first.id }] }]);
    assert.equal(after.again!.status, 'queued', 'a parent that already succeeded counts as done');
  });

  test('ctx.parents() names a parent pruned meanwhile (pruned: true) instead of leaving it out', async () => {
    let ready = false;
    const picky = defineJob({ type: 'wf-picky', handler: async (_p: unknown, ctx) => {
      const parents = await ctx.parents();
      if (!ready) throw new PermanentFailure('not yet');
      return parents.map((p) => [p.type, p.result ?? null, p.pruned ?? false]);
    } });
    const { client } = await h.serve([step, picky]);
    const jobs = await client.enqueueFlow([{ key: 'a', type: 'wf-step', payload: { name: 'a' } }, { key: 'c', type: 'wf-picky', payload: {}, dependsOn: ['a'] }]);
    await h.waitStatus(jobs.c!.id, 'dead', 10_000);
    // the child ended, so retention may take its parent; an operator's retry then runs the child again
    await new Promise((r) => setTimeout(r, 10));
    await h.storage.jobs.prune({ statuses: ['succeeded'], olderThanMs: 0, limit: 10_000 });
    assert.equal(await h.storage.jobs.get({ id: jobs.a!.id }), null, 'the parent was pruned');
    ready = true;
    assert.equal((await h.storage.jobs.retry({ id: jobs.c!.id })).applied, true);
    assert.deepEqual((await h.waitStatus(jobs.c!.id, 'succeeded', 10_000)).result, [[null, null, true]]);
  });

  test('a cycle, an unknown key or a bad item: a ValidationError and nothing written', async () => {
    const client = h.clientWith([step]);
    const before = (await h.storage.jobs.list({ type: 'wf-step', limit: 1_000 })).length;
    const item = (key: string, dependsOn: string[], payload: unknown = { name: key }) => ({ key, type: 'wf-step' as const, payload: payload as { name: string }, dependsOn });
    for (const items of [[item('a', ['b']), item('b', ['a'])], [item('a', ['nope'])], [item('a', []), item('b', ['a'], { name: 1n })]]) {
      await assert.rejects(client.enqueueFlow(items), ValidationError);
    }
    await assert.rejects(client.enqueueFlow([{ key: 'x', type: 'wf-step', payload: { name: 'x' }, options: { idempotencyKey: 'k' } }]), /take no tx, idempotencyKey or unique/);
    const stored = { key: 'y', type: 'wf-step' as const, payload: { name: 'y' }, dependsOn: [{ jobId: '999999999' }] };
    await assert.rejects(client.enqueueFlow([item('x', []), stored]), /job 999999999, which does not exist/);
    assert.equal((await h.storage.jobs.list({ type: 'wf-step', limit: 1_000 })).length, before);
  });

  test("a parent that dies: 'cancel' cancels what waits for it, 'hold' keeps it waiting", async () => {
    const { client } = await h.serve([step]);
    const flow = (policy: 'cancel' | 'hold') => client.enqueueFlow([
      { key: 'root', type: 'wf-step', payload: { name: 'root', fail: true } },
      { key: 'next', type: 'wf-step', payload: { name: 'next' }, dependsOn: ['root'] },
      { key: 'last', type: 'wf-step', payload: { name: 'last' }, dependsOn: ['next'] },
    ], { onParentFailure: policy });
    const cancel = await flow('cancel');
    const hold = await flow('hold');
    await h.waitStatus(cancel.root!.id, 'dead');
    await h.waitStatus(hold.root!.id, 'dead');
    for (const k of ['next', 'last']) {
      const j = await h.waitStatus(cancel[k]!.id, 'cancelled');
      assert.equal(j.lastErrorCode, 'PARENT_FAILED');
      assert.equal((await h.job(hold[k]!.id)).status, 'waiting');
    }
  });
});
