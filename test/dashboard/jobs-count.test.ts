/**
 * The jobs page counts its filter once: the page (a filter change is a navigation) counts, and
 * the live refreshes of that filter reuse the count while it is fresh instead of counting on
 * every poll; another filter counts for itself. The kept count expires after its TTL and the
 * cache holds a bounded number of filters. The capped notice names both bounds honestly.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { Storage } from '../../src/core/storage.js';
import { createDashboard } from '../../src/dashboard/index.js';
import type { DashboardClient } from '../../src/dashboard/client.js';
import { COUNT_TTL_MS, CountCache } from '../../src/dashboard/count-cache.js';
import type { Seeded } from './support.js';
import { get, getJson, seededMemory } from './support.js';

let storage: Storage;
let s: Seeded;
beforeEach(async () => ({ storage, s } = await seededMemory()));
afterEach(() => storage.close());

type Live = { slots: { count: { t: string }[] } };

/** The client, with its counted and uncounted searches tallied. */
function tallied(): { client: DashboardClient; calls: { counted: number; uncounted: number } } {
  const calls = { counted: 0, uncounted: 0 };
  const client: DashboardClient = new Proxy(s.full, {
    get: (t, p) => {
      if (p === 'findJobs') return (q: Parameters<typeof t.findJobs>[0]) => (calls.counted++, t.findJobs(q));
      if (p === 'searchJobs') return (q: Parameters<typeof t.searchJobs>[0]) => (calls.uncounted++, t.searchJobs(q));
      return Reflect.get(t, p) as unknown;
    },
  });
  return { client, calls };
}

describe('dashboard: the jobs page counts once per filter', () => {
  test('live refreshes reuse the page’s count; another filter or a new page load counts again', async () => {
    for (let i = 0; i < 3; i++) await s.client.enqueue('count-me', { i });
    const { client, calls } = tallied();
    const app = createDashboard({ client });
    assert.match((await get(app, '/jobs?type=count-me')).text, /3 jobs match/);
    assert.deepEqual(calls, { counted: 1, uncounted: 0 });
    for (let i = 0; i < 3; i++) {
      const live = await getJson<Live>(app, '/api/jobs?type=count-me');
      assert.equal(live.body!.slots.count[0]!.t, '3 jobs match', 'the kept count is shown');
    }
    assert.deepEqual(calls, { counted: 1, uncounted: 3 }, 'three refreshes, no count');
    // the cursor is not part of the filter: an older page's refresh keeps the count too
    await getJson<Live>(app, '/api/jobs?type=count-me&before=999999');
    assert.deepEqual(calls, { counted: 1, uncounted: 4 });

    await getJson<Live>(app, '/api/jobs?type=report');
    assert.deepEqual(calls, { counted: 2, uncounted: 4 }, 'a filter not counted yet is counted');
    await get(app, '/jobs?type=count-me');
    assert.deepEqual(calls, { counted: 3, uncounted: 4 }, 'a page load counts afresh');
  });

  test('a kept count lasts its TTL; the oldest filters leave first', () => {
    let now = 1_000;
    const cache = new CountCache(() => now);
    const c = { count: 7, exact: true, estimated: false };
    cache.set('a', c);
    now += COUNT_TTL_MS - 1;
    assert.deepEqual(cache.get('a'), c);
    now += 1;
    assert.equal(cache.get('a'), undefined, 'expired');
    for (let i = 0; i <= 200; i++) cache.set(`f${i}`, c);
    assert.equal(cache.get('f0'), undefined, 'past 200 filters the first kept leaves');
    assert.deepEqual(cache.get('f1'), c);
    assert.deepEqual(cache.get('f200'), c);
  });

  test('a filter no index answers, stopped at its read bound, says how far it read', async () => {
    await s.client.enqueue('range-me', {});
    // newer jobs of another type: two ids from the newest hold no match
    for (let i = 0; i < 3; i++) await s.client.enqueue('report', { i });
    const short: DashboardClient = new Proxy(s.full, {
      get: (t, p) => (p === 'findJobs' ? (q: Parameters<typeof t.findJobs>[0]) => t.findJobs({ ...q, readLimit: 2 }) : Reflect.get(t, p)),
    });
    const { text } = await get(createDashboard({ client: short }), '/jobs?type=range-me');
    assert.match(text, /This page read the 100,000 job ids nearest here \(no index answers this filter\); more may match further on/);
  });
});
