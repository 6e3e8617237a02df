/** The job page shows a job's last progress and its result, escaped, and keeps both live. */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import type { Storage } from '../../src/core/storage.js';
import { createDashboard } from '../../src/dashboard/index.js';
import type { Seeded } from './support.js';
import { XSS, foreignScripts, get, getJson, seededMemory } from './support.js';

let storage: Storage;
let s: Seeded;
beforeEach(async () => ({ storage, s } = await seededMemory()));
afterEach(() => storage.close());

test('progress and result on the job page: attacker text escaped, both in the live answer', async () => {
  await storage.jobs.insert({ jobs: [{ queue: 'default', type: 'wf-page', payload: {}, priority: 0, runAfterMs: 0, maxAttempts: 1, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000 }] });
  const [c] = await storage.leases.claim({ workerId: 'w', types: ['wf-page'], queues: null, limit: 1, leaseMs: 30_000 });
  assert.ok(c);
  const app = createDashboard({ client: s.full });
  const before = await get(app, `/jobs/${c.id}`);
  assert.match(before.text, /<dt>Result<\/dt><dd><span data-slot="result"><span class="muted">—<\/span>/);

  await storage.workflows.progress({ id: c.id, leaseToken: c.leaseToken, value: JSON.stringify({ step: XSS }), note: XSS });
  await storage.leases.finish({ items: [{ id: c.id, leaseToken: c.leaseToken, status: 'succeeded', result: JSON.stringify({ html: XSS }), attempt: { outcome: 'succeeded' } }] });
  const { res, text } = await get(app, `/jobs/${c.id}`);
  assert.equal(res.status, 200);
  assert.deepEqual(foreignScripts(text), []);
  assert.ok(!text.includes(XSS), 'no raw attacker text');
  assert.ok(text.includes('{&quot;html&quot;:&quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;}'), 'the result, escaped');
  assert.ok(text.includes('{&quot;step&quot;:&quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;}'), 'the progress value, escaped');

  const live = await getJson<{ slots: Record<string, { t?: string }[]> }>(app, `/api/jobs/${c.id}`);
  assert.ok(!/[<>]/.test(live.text));
  assert.equal(live.body!.slots.result?.[0]?.t, JSON.stringify({ html: XSS }));
  assert.equal(live.body!.slots.progress?.[0]?.t, JSON.stringify({ step: XSS }));
  assert.equal(live.body!.slots.progress?.[2]?.t, XSS, 'the note');
});

test("a workflow job's page links the jobs it runs after and before, and shows its batch's progress", async () => {
  const client = s.client;
  const batch = await client.batches.create({ onComplete: { type: 'wf-done', payload: {} } });
  const [root, join] = await client.batches.add(batch.id, [
    { key: 'root', type: 'wf-step', payload: {} },
    { key: 'join', type: 'wf-step', payload: {}, dependsOn: ['root'] },
  ]);
  const app = createDashboard({ client: s.full });
  const page = await get(app, `/jobs/${join!.id}`);
  assert.match(page.text, new RegExp(`after <a href="/jobs/${root!.id}">#${root!.id}</a>`));
  assert.match(page.text, /waits for 1/);
  assert.match(page.text, new RegExp(`batch ${batch.id}, open: 0 of 2 ended \\(0 succeeded, 0 dead, 0 cancelled\\), callback wf-done`));
  const live = await getJson<{ slots: Record<string, { t?: string; h?: string }[]> }>(app, `/api/jobs/${root!.id}`);
  assert.deepEqual(live.body!.slots.workflow, [{ t: 'before ' }, { t: `#${join!.id}`, h: `/jobs/${join!.id}` }]);
  assert.match((await get(app, `/jobs/${s.deadId}`)).text, /<dt>Workflow<\/dt><dd><span data-slot="workflow"><span class="muted">—<\/span>/);
});
