/**
 * The overview's queue table carries each queue's state and a Pause / Resume button: the POST
 * needs the CSRF token, stores the pause for every worker (the claim then takes nothing from the
 * queue), and comes back to the overview with a notice; a client without the API shows no button.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import type { Storage } from '../../src/core/storage.js';
import { createDashboard } from '../../src/dashboard/index.js';
import type { Seeded } from './support.js';
import { Jar, csrfOf, get, post, seededMemory } from './support.js';

let storage: Storage;
let s: Seeded;
beforeEach(async () => ({ storage, s } = await seededMemory()));
afterEach(() => storage.close());

test('pause from the overview stops claims from the queue; resume undoes it', async () => {
  const app = createDashboard({ client: s.client });
  const jar = new Jar();
  const page = await get(app, '/', jar);
  assert.match(page.text, /action="\/queues\/default\/pause"/);
  assert.equal((await post(app, '/queues/default/pause', { csrf: 'forged' }, jar)).res.status, 403, 'a forged form changes nothing');
  assert.equal((await storage.queues.states()).length, 0);
  const paused = await post(app, '/queues/default/pause', { csrf: csrfOf(page.text) }, jar);
  assert.equal(paused.res.status, 303);
  assert.equal(paused.res.headers.get('location'), '/?done=paused');
  assert.deepEqual((await storage.queues.states()).map((q) => [q.queue, q.paused]), [['default', true]]);
  assert.deepEqual(await storage.leases.claim({ workerId: 'w', types: ['orphan-type'], queues: null, limit: 5, leaseMs: 10_000 }), []);
  const after = await get(app, '/?done=paused', jar);
  assert.match(after.text, /The queue is paused/);
  assert.match(after.text, /<span class="err">paused<\/span> <form class="inline" method="post" action="\/queues\/default\/resume">/);
  await post(app, '/queues/default/resume', { csrf: csrfOf(after.text) }, jar);
  assert.equal((await storage.leases.claim({ workerId: 'w', types: ['orphan-type'], queues: null, limit: 5, leaseMs: 10_000 })).length, 1);
});

test('a client without the queue API shows no button and refuses the POST', async () => {
  const hidden = new Set<PropertyKey>(['queueStates', 'pauseQueue', 'resumeQueue']);
  const client = new Proxy(s.client, { get: (t, p) => (hidden.has(p) ? undefined : (Reflect.get(t, p, t) as unknown)) });
  const app = createDashboard({ client });
  const jar = new Jar();
  const page = await get(app, '/', jar);
  assert.doesNotMatch(page.text, /\/pause"/);
  // a valid token from a page that has forms: the refusal is the missing API, not the CSRF check
  const detail = await get(app, `/jobs/${s.deadId}`, jar);
  assert.equal((await post(app, '/queues/default/pause', { csrf: csrfOf(detail.text) }, jar)).res.status, 404);
});
