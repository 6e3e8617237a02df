/**
 * The queues page: each queue's depth (due, running, failed), oldest due age, throughput over
 * the last five minutes and paused state, with Pause / Resume. The POST needs the CSRF token,
 * stores the pause for every worker (the claim then takes nothing from the queue), and comes
 * back with a notice; a client without the API shows no button and refuses the POST.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import type { Storage } from '../../src/core/storage.js';
import { createDashboard } from '../../src/dashboard/index.js';
import type { Seeded } from './support.js';
import { Jar, XSS, csrfOf, get, getJson, post, seededMemory } from './support.js';

let storage: Storage;
let s: Seeded;
beforeEach(async () => ({ storage, s } = await seededMemory()));
afterEach(() => storage.close());

const claimOrphan = () => storage.leases.claim({ workerId: 'w', types: ['orphan-type'], queues: null, limit: 5, leaseMs: 10_000 });

test('pause from the queues page stops claims from the queue; resume undoes it', async () => {
  const app = createDashboard({ client: s.full });
  const jar = new Jar();
  const page = await get(app, '/queues', jar);
  assert.match(page.text, /action="\/queues\/pause"><input type="hidden" name="csrf" value="[^"]+"><input type="hidden" name="queue" value="default">/);
  assert.equal((await post(app, '/queues/pause', { csrf: 'forged', queue: 'default' }, jar)).res.status, 403, 'a forged form changes nothing');
  assert.equal((await storage.queues.states()).length, 0);
  assert.equal((await post(app, '/queues/pause', { csrf: csrfOf(page.text), queue: '../x y' }, jar)).res.status, 400, 'a malformed name is refused');
  const paused = await post(app, '/queues/pause', { csrf: csrfOf(page.text), queue: 'default' }, jar);
  assert.equal(paused.res.status, 303);
  assert.equal(paused.res.headers.get('location'), '/queues?done=paused');
  assert.deepEqual((await storage.queues.states()).map((q) => [q.queue, q.paused]), [['default', true]]);
  assert.deepEqual(await claimOrphan(), []);
  const after = await get(app, '/queues?done=paused', jar);
  assert.match(after.text, /The queue is paused/);
  assert.match(after.text, /<span class="badge s-paused">paused<\/span> since <time/);
  assert.match(after.text, /action="\/queues\/resume">.*?value="default"><button class="primary">Resume<\/button>/);
  // the overview marks it too
  assert.match((await get(app, '/', jar)).text, /<a href="\/queues" class="badge s-paused">paused<\/a>/);
  await post(app, '/queues/resume', { csrf: csrfOf(after.text), queue: 'default' }, jar);
  assert.equal((await claimOrphan()).length, 1);
});

test('depth, oldest due and throughput per queue, on the page and in its JSON', async () => {
  // one more queue whose name is attacker-chosen text in the storage: escaped everywhere
  await storage.jobs.insert({ jobs: [{ queue: XSS, type: 'x', payload: {}, priority: 0, runAfterMs: 0, maxAttempts: 1, idempotencyKey: null, timeoutMs: 1000, maxRuntimeMs: 1000 }] });
  const app = createDashboard({ client: s.full });
  const { text } = await get(app, '/queues');
  assert.ok(!text.includes('<script>alert'));
  const live = await getJson<{ tables: { queues: { p: { t?: string }[] }[][] } }>(app, '/api/queues');
  assert.ok(!live.text.includes('<script'), 'the JSON escapes < too');
  const rows = new Map(live.body!.tables.queues.map((r) => [r[0]!.p[0]!.t, r.map((c) => c.p.map((p) => p.t ?? '').join(''))]));
  // default: due = the orphan (the other queued one is an hour away), running 0, failed 0; the seed ended 2 attempts (1 dead)
  const d = rows.get('default')!;
  assert.deepEqual(d.slice(1, 4), ['1', '0', '0']);
  assert.match(d[4]!, /^\d+(\.\d+)? (ms|s)$/, 'oldest due age');
  assert.deepEqual(d.slice(5, 7), ['2', '1'], 'ended in 5 min, of which failed');
  assert.deepEqual(rows.get(XSS)!.slice(1, 4), ['1', '0', '0']);
});

test('a client without the queue API shows no button and refuses the POST', async () => {
  const hidden = new Set<PropertyKey>(['queueStates', 'pauseQueue', 'resumeQueue']);
  const client = new Proxy(s.client, { get: (t, p) => (hidden.has(p) ? undefined : (Reflect.get(t, p, t) as unknown)) });
  const app = createDashboard({ client });
  const jar = new Jar();
  const page = await get(app, '/queues', jar);
  assert.equal(page.res.status, 200);
  assert.doesNotMatch(page.text, /\/pause"/);
  assert.equal((await post(app, '/queues/pause', { csrf: csrfOf(page.text), queue: 'default' }, jar)).res.status, 404);
});
