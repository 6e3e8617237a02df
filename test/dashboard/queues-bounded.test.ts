/**
 * The queues page reads the bounded summary, never countJobs (a GROUP BY over every job on each
 * poll); when more jobs wait for a retry than the summary counts, the Failed column says "many"
 * and links to them instead of a number it does not have.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import type { Storage } from '../../src/core/storage.js';
import { createDashboard } from '../../src/dashboard/index.js';
import type { DashboardClient } from '../../src/dashboard/client.js';
import type { Seeded } from './support.js';
import { getJson, seededMemory } from './support.js';

let storage: Storage;
let s: Seeded;
beforeEach(async () => ({ storage, s } = await seededMemory()));
afterEach(() => storage.close());

type Rows = { tables: { queues: { p: { t?: string; h?: string; ti?: string }[] }[][] } };

function bounded(failedPastCap: boolean): DashboardClient {
  return new Proxy(s.full, {
    get: (t, p) => {
      if (p === 'countJobs') return () => assert.fail('the queues page grouped every job');
      if (p === 'summarizeJobs' && failedPastCap) {
        return async () => {
          const sum = await t.summarizeJobs();
          return { statuses: sum.statuses.map((x) => (x.status === 'failed' ? { ...x, count: 10_000, exact: false } : x)), groups: sum.groups.filter((g) => g.status !== 'failed') };
        };
      }
      return Reflect.get(t, p) as unknown;
    },
  });
}

test('the queues page counts through the bounded summary', async () => {
  await s.client.enqueue('retry-me', {});
  const claimed = await storage.leases.claim({ workerId: 'w', types: ['retry-me'], queues: null, limit: 1, leaseMs: 10_000 });
  assert.equal(claimed.length, 1);
  await storage.leases.finish({ items: claimed.map((j) => ({ id: j.id, leaseToken: j.leaseToken, status: 'failed' as const, runAfterMs: 60_000, error: { code: 'E', message: 'x' }, attempt: { outcome: 'failed' as const } })) });
  const live = await getJson<Rows>(createDashboard({ client: bounded(false) }), '/api/queues');
  const row = live.body!.tables.queues.find((r) => r[0]!.p[0]!.t === 'default')!;
  assert.equal(row[3]!.p[0]!.t, '1', 'one job waits for its retry');
});

test('more jobs waiting for a retry than the summary counts: "many", linked', async () => {
  const live = await getJson<Rows>(createDashboard({ client: bounded(true) }), '/api/queues');
  const failed = live.body!.tables.queues.find((r) => r[0]!.p[0]!.t === 'default')![3]!.p[0]!;
  assert.equal(failed.t, 'many');
  assert.equal(failed.h, '/jobs?queue=default&status=failed');
});
