/** The workflow graph page and the batch pages: every node, edge and member shown and linked, bounded, escaped, live. */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import type { FlowJob, NewJob, Storage } from '../../src/core/storage.js';
import { createDashboard } from '../../src/dashboard/index.js';
import type { Seeded } from './support.js';
import { Jar, TOKEN, XSS, foreignScripts, get, getJson } from './support.js';
import { seededMemory } from './support.js';

let storage: Storage;
let s: Seeded;
beforeEach(async () => ({ storage, s } = await seededMemory()));
afterEach(() => storage.close());

const spec = (type: string): NewJob => ({ queue: 'default', type, payload: {}, priority: 0, runAfterMs: 0, maxAttempts: 1, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000 });
const flowJob = (type: string, parents: number[]): FlowJob => ({ ...spec(type), parents });
const count = (text: string, re: RegExp) => [...text.matchAll(re)].length;
type Live = { slots: Record<string, { t?: string; h?: string; c?: string }[]>; tables: Record<string, unknown[][]>; marks: Record<string, string> };

async function succeed(type: string): Promise<void> {
  const [c] = await storage.leases.claim({ workerId: 'w', types: [type], queues: null, limit: 1, leaseMs: 30_000 });
  assert.ok(c);
  await storage.leases.finish({ items: [{ id: c.id, leaseToken: c.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }] });
}

test('the graph page draws every job and edge of a diamond, linked and escaped, from any of its jobs; its statuses are live', async () => {
  const rootType = `root ${XSS}`;
  const [root, left, right, join] = await storage.workflows.insertFlow({ jobs: [flowJob(rootType, []), flowJob('left', [0]), flowJob(XSS, [0]), flowJob('join', [1, 2])], onParentFailure: 'cancel' });
  const ids = [root!.id, left!.id, right!.id, join!.id];
  const app = createDashboard({ client: s.full });
  for (const from of ids) {
    const { res, text } = await get(app, `/jobs/${from}/workflow`);
    assert.equal(res.status, 200);
    assert.deepEqual(foreignScripts(text), []);
    assert.ok(!text.includes(XSS), 'no raw attacker text');
    assert.ok(text.includes('&lt;script&gt;alert(1)&lt;/script&gt;'), 'the type, escaped');
    for (const id of ids) {
      assert.equal(count(text, new RegExp(`<a href="/jobs/${id}"><g class="wf-node[^"]*" data-mark="j${id}" data-state="[a-z]+" data-node="${id}">`, 'g')), 1, `node ${id} from ${from}`);
    }
    assert.equal(count(text, /data-node="/g), 4);
    assert.deepEqual([...text.matchAll(/data-edge="(\d+)-(\d+)"/g)].map((m) => [m[1], m[2]]), [[root!.id, left!.id], [root!.id, right!.id], [left!.id, join!.id], [right!.id, join!.id]]);
    assert.match(text, new RegExp(`class="wf-node self" data-mark="j${from}"`));
    assert.match(text, /4 jobs: 3 waiting, 1 queued/);
  }
  const before = await getJson<Live>(app, `/api/jobs/${join!.id}/workflow`);
  assert.deepEqual(before.body!.marks, { [`j${root!.id}`]: 'queued', [`j${left!.id}`]: 'waiting', [`j${right!.id}`]: 'waiting', [`j${join!.id}`]: 'waiting' });
  await succeed(rootType);
  const after = await getJson<Live>(app, `/api/jobs/${join!.id}/workflow`);
  assert.ok(!/[<>]/.test(after.text));
  assert.deepEqual(after.body!.marks, { [`j${root!.id}`]: 'succeeded', [`j${left!.id}`]: 'queued', [`j${right!.id}`]: 'queued', [`j${join!.id}`]: 'waiting' });
  assert.equal(after.body!.tables.workflow!.length, 4);
  assert.match(JSON.stringify(after.body!.slots.counts), /1 waiting, 2 queued, 1 succeeded/);
  assert.match((await get(app, `/jobs/${left!.id}`)).text, new RegExp(`<a href="/jobs/${left!.id}/workflow">graph</a>`), 'linked from the job page');
  assert.doesNotMatch((await get(app, `/jobs/${s.deadId}`)).text, /\/workflow">graph/, 'not for a job outside any workflow');
});

test('a workflow larger than a page reads shows the jobs nearest the one asked for and says so', async () => {
  const jobs = Array.from({ length: 502 }, (_, i) => flowJob('long-chain', i === 0 ? [] : [i - 1]));
  const rows = await storage.workflows.insertFlow({ jobs, onParentFailure: 'cancel' });
  const app = createDashboard({ client: s.full });
  const { res, text } = await get(app, `/jobs/${rows[0]!.id}/workflow`);
  assert.equal(res.status, 200);
  assert.match(text, /Showing 500 of at least 501 jobs: those nearest job \d+/);
  assert.equal(count(text, /data-node="/g), 500);
  assert.ok(text.includes(`data-node="${rows[499]!.id}"`) && !text.includes(`data-node="${rows[500]!.id}"`));
  const small = await storage.workflows.insertFlow({ jobs: [flowJob('pair', []), flowJob('pair', [0])], onParentFailure: 'cancel' });
  assert.doesNotMatch((await get(app, `/jobs/${small[0]!.id}/workflow`)).text, /Showing/);
});

test('graph page: an unknown job is 404, a malformed id 400, and a client without the read has no such page', async () => {
  const app = createDashboard({ client: s.full });
  assert.equal((await get(app, '/jobs/999999/workflow')).res.status, 404);
  assert.equal((await get(app, '/api/jobs/999999/workflow')).res.status, 404);
  assert.equal((await get(app, '/jobs/1x/workflow')).res.status, 400);
  const narrow = createDashboard({ client: s.client });
  assert.equal((await get(narrow, `/jobs/${s.queuedId}/workflow`)).res.status, 404);
  assert.equal((await get(narrow, '/batches')).res.status, 404);
  assert.doesNotMatch((await get(narrow, '/')).text, /href="\/batches"/, 'no Batches in the nav');
});

test("a batch's page: its counts as a bar and in words, its members paged and linked, its callback linked once enqueued; all live and escaped", async () => {
  const batch = await storage.workflows.createBatch({ callback: spec(`cb ${XSS}`), onSuccessOnly: false });
  const members = await storage.workflows.insertFlow({ jobs: Array.from({ length: 53 }, () => flowJob('member', [])), onParentFailure: 'cancel', batchId: batch.id });
  const claimed = await storage.leases.claim({ workerId: 'w', types: ['member'], queues: null, limit: 53, leaseMs: 30_000 });
  const ERR = { code: 'E', message: 'no' };
  await storage.leases.finish({ items: claimed.slice(0, 2).map((c, i) => (i === 0 ? { id: c.id, leaseToken: c.leaseToken, status: 'succeeded' as const, attempt: { outcome: 'succeeded' as const } } : { id: c.id, leaseToken: c.leaseToken, status: 'dead' as const, error: ERR, attempt: { outcome: 'dead' as const, error: ERR } })) });
  const app = createDashboard({ client: s.full });
  const { res, text } = await get(app, `/batches/${batch.id}`);
  assert.equal(res.status, 200);
  assert.deepEqual(foreignScripts(text), []);
  assert.ok(!text.includes(XSS));
  assert.ok(text.includes('cb &lt;script&gt;alert(1)&lt;/script&gt;'));
  assert.match(text, /2 of 53 ended: 1 succeeded, 1 dead, 0 cancelled, 51 pending/);
  assert.match(text, /<div data-slot="bar" class="bar"><span class="s-succeeded w2" title="1 succeeded"><\/span><span class="s-dead w2" title="1 dead"><\/span><span class="s-waiting w96" title="51 pending"><\/span><\/div>/);
  assert.equal(count(text, /<td class="num" data-label="Job"><a href="\/jobs\/\d+">/g), 50);
  assert.ok(text.includes(`<a href="/batches/${batch.id}?after=${members[49]!.id}" rel="next">`));
  const second = await get(app, `/batches/${batch.id}?after=${members[49]!.id}`);
  assert.equal(count(second.text, /data-label="Job"><a href="\/jobs\/(\d+)">/g), 3);
  assert.ok(second.text.includes(`href="/jobs/${members[52]!.id}"`));
  assert.match((await get(app, `/jobs/${members[0]!.id}`)).text, new RegExp(`<a href="/batches/${batch.id}">batch page</a>`), 'linked from a member');

  await storage.workflows.closeBatch({ batchId: batch.id });
  await storage.leases.finish({ items: claimed.slice(2).map((c) => ({ id: c.id, leaseToken: c.leaseToken, status: 'succeeded' as const, attempt: { outcome: 'succeeded' as const } })) });
  const live = await getJson<Live>(app, `/api/batches/${batch.id}`);
  assert.ok(!/[<>]/.test(live.text));
  assert.deepEqual(live.body!.slots.state, [{ t: 'done', c: 'badge s-done' }]);
  assert.equal(live.body!.slots.ended![0]!.t, '53 of 53 ended: 52 succeeded, 1 dead, 0 cancelled, 0 pending');
  const [cb] = await storage.jobs.list({ type: `cb ${XSS}`, limit: 2 });
  assert.ok(cb);
  assert.deepEqual(live.body!.slots.callback!.slice(2, 3), [{ t: `job ${cb.id}`, h: `/jobs/${cb.id}` }]);
  assert.equal(live.body!.slots.callback![0]!.t, `cb ${XSS}`, 'as text, for textContent');
});

test('the batches list: newest first, paged, in the nav', async () => {
  const made = [];
  for (let i = 0; i < 52; i++) made.push(await storage.workflows.createBatch({ callback: spec('cb'), onSuccessOnly: false }));
  const app = createDashboard({ client: s.full });
  const { text } = await get(app, '/batches');
  assert.match(text, /<a href="\/batches" class="on" aria-current="page">Batches<\/a>/);
  const listed = [...text.matchAll(/<a href="\/batches\/(\d+)">/g)].map((m) => m[1]);
  assert.deepEqual(listed, made.slice(2).reverse().map((b) => b.id));
  assert.ok(text.includes(`<a href="/batches?before=${made[2]!.id}" rel="next">older`));
  const older = await get(app, `/batches?before=${made[2]!.id}`);
  assert.deepEqual([...older.text.matchAll(/<a href="\/batches\/(\d+)">/g)].map((m) => m[1]), [made[1]!.id, made[0]!.id]);
  const live = await getJson<Live>(app, '/api/batches');
  assert.equal(live.body!.tables.batches!.length, 50);
  assert.equal((await get(app, '/batches?before=x')).res.status, 400);
});

test('with a token the workflow and batch pages and their JSON need the credentials', async () => {
  const [root] = await storage.workflows.insertFlow({ jobs: [flowJob('guarded', []), flowJob('guarded', [0])], onParentFailure: 'cancel' });
  const batch = await storage.workflows.createBatch({ callback: spec('cb'), onSuccessOnly: false });
  const app = createDashboard({ client: s.full, token: TOKEN });
  for (const path of [`/jobs/${root!.id}/workflow`, '/batches', `/batches/${batch.id}`]) {
    const { res } = await get(app, path);
    assert.equal(res.status, 303, path);
    assert.match(res.headers.get('location') ?? '', /^\/login\?next=/);
  }
  for (const path of [`/api/jobs/${root!.id}/workflow`, '/api/batches', `/api/batches/${batch.id}`]) assert.equal((await get(app, path)).res.status, 401, path);
  const bearer = { authorization: `Bearer ${TOKEN}` };
  assert.equal((await get(app, `/jobs/${root!.id}/workflow`, new Jar(), bearer)).res.status, 200);
  assert.equal((await get(app, `/api/batches/${batch.id}`, new Jar(), bearer)).res.status, 200);
});
