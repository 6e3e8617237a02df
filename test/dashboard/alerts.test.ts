/**
 * The overview shows each alert rule's state from the client's `listAlerts`: firing ones first
 * under a notice, every value escaped; the section is hidden while no rule ever fired or the
 * client has no alerts, and the live answer shows it once one fires.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import type { Storage } from '../../src/core/storage.js';
import { createDashboard } from '../../src/dashboard/index.js';
import type { Seeded } from './support.js';
import { XSS, get, seededMemory } from './support.js';

let storage: Storage;
let s: Seeded;
beforeEach(async () => ({ storage, s } = await seededMemory()));
afterEach(() => storage.close());

test('the overview lists alert states, firing first, escaped', async () => {
  await storage.alerts.transition({ rule: 'stuck:queue:mail', episode: 0, state: 'firing', value: 754_000 });
  await storage.alerts.transition({ rule: 'failure-rate:type:email', episode: 0, state: 'firing', value: 0.8 });
  await storage.alerts.transition({ rule: 'failure-rate:type:email', episode: 1, state: 'ok', value: 0.123456 });
  // the storage keeps any name: the page must escape it
  await storage.alerts.transition({ rule: XSS, episode: 0, state: 'firing', value: null });
  const { res, text } = await get(createDashboard({ client: s.client }), '/');
  assert.equal(res.status, 200);
  assert.ok(!text.includes('<script>alert'), 'no raw <script');
  assert.match(text, /<section data-show="alerts"><h2>Alerts<\/h2><div class="notice bad" data-show="firing"><strong><span data-slot="firing">2 alert\(s\) firing\.<\/span><\/strong>/);
  const rows = [...text.matchAll(/<tr><td class="mono">([^<]*)<\/td><td><span class="badge [^"]+">(\w+)<\/span><\/td>.*?<td class="num">([^<]*)<\/td><td class="num">(\d+)<\/td><\/tr>/g)].map((m) => m.slice(1));
  // firing ones first, each group by rule name
  assert.deepEqual(rows, [
    ['&lt;script&gt;alert(1)&lt;/script&gt;', 'firing', '—', '1'],
    ['stuck:queue:mail', 'firing', '754000', '1'],
    ['failure-rate:type:email', 'ok', '0.123', '2'],
  ]);
});

test('the alert section is hidden while no rule has fired, and for a client without alerts', async () => {
  const hidden = /<section data-show="alerts" hidden><h2>Alerts/;
  assert.match((await get(createDashboard({ client: s.client }), '/')).text, hidden);
  await storage.alerts.transition({ rule: 'dead', episode: 0, state: 'firing', value: 3 });
  assert.match((await get(createDashboard({ client: s.client }), '/')).text, /<section data-show="alerts"><h2>Alerts/);
  assert.match((await get(createDashboard({ client: pick(s.client) }), '/')).text, hidden);
  // the live answer says the same, so a page left open shows the section when a rule fires
  const live = JSON.parse((await get(createDashboard({ client: s.client }), '/api/overview')).text) as { show: Record<string, boolean>; tables: { alerts: unknown[] } };
  assert.deepEqual([live.show.alerts, live.show.firing, live.tables.alerts.length], [true, true, 1]);
});

/** The client's admin calls as a plain object (no listAlerts). */
function pick(c: Seeded['client']) {
  return {
    listJobs: c.listJobs.bind(c), getJob: c.getJob.bind(c), listAttempts: c.listAttempts.bind(c), countJobs: c.countJobs.bind(c), listWorkers: c.listWorkers.bind(c),
    listEffects: c.listEffects.bind(c), unhandledJobs: c.unhandledJobs.bind(c), retryNow: c.retryNow.bind(c), cancel: c.cancel.bind(c),
  };
}
