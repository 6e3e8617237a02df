/**
 * Per-key limits across processes: four worker processes drain 200 tenants × 50 jobs of a type
 * allowed two running jobs per tenant. The running count per tenant, sampled from the database
 * throughout, never exceeds 2, and neither does the overlap of any tenant's attempts in the
 * history afterwards; no job was claimed and handed back (one attempt each, all succeeded).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { AttemptRow } from '../../src/core/storage.js';
import type { CliProcess } from './support.js';
import { Sandbox, dbTargets, killAll, waitForSucceeded } from './support.js';

after(killAll);

const TENANTS = 200;
const PER_TENANT = 50;
const TOTAL = TENANTS * PER_TENANT;
const LIMIT = 2;

/** The most attempts of one tenant that were running at one instant (an end before a start at the same ms). */
function maxOverlap(attempts: AttemptRow[]): number {
  const events = attempts.flatMap((a) => [[a.startedAt.getTime(), 1], [a.finishedAt!.getTime(), -1]] as const).sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let cur = 0;
  let max = 0;
  for (const [, d] of events) max = Math.max(max, (cur += d));
  return max;
}

for (const { kind, server, skip } of await dbTargets('process key limits')) {
  describe(`process: per-key limit across four workers (${kind})`, { skip }, () => {
    it(`${TENANTS} tenants × ${PER_TENANT} jobs at ${LIMIT} per tenant: never more than ${LIMIT} running per tenant, no bounce`, { timeout: 600_000 }, async (t) => {
      const sb = await Sandbox.create(kind, server);
      try {
        for (let i = 0; i < PER_TENANT; i++) {
          // the test's client has no job definitions: the key is given, not read from the payload
          await sb.client.enqueueMany(Array.from({ length: TENANTS }, (_, k) => ({ type: 'tenant-work', payload: { tenant: `t${k}`, sleepMs: 3, effectKey: `send:${k}:${i}` }, options: { concurrencyKey: `t${k}` } })));
        }
        const workers: CliProcess[] = await Promise.all(Array.from({ length: 4 }, () => sb.worker(['--concurrency', '10', '--lease', '10s'])));
        let samples = 0;
        let worst = 0;
        let done = false;
        const sampling = (async () => {
          while (!done) {
            const running = await sb.storage.jobs.list({ status: 'running', limit: 1000 });
            const perKey = new Map<string, number>();
            for (const j of running) perKey.set(j.concurrencyKey ?? '', (perKey.get(j.concurrencyKey ?? '') ?? 0) + 1);
            worst = Math.max(worst, ...perKey.values(), 0);
            samples++;
            // SQLite answers synchronously: give timers (the drain's wait, the test's timeout) a turn
            await new Promise((r) => setImmediate(r));
          }
        })();
        await waitForSucceeded(sb, TOTAL);
        done = true;
        await sampling;
        t.diagnostic(`${kind}: ${samples} samples of the running jobs; most running for one tenant: ${worst}`);
        assert.ok(samples > 0);
        assert.ok(worst <= LIMIT, `a tenant had ${worst} running jobs`);
        for (const w of workers) w.signal('SIGTERM');
        for (const w of workers) assert.equal((await w.waitExit()).code, 0, w.tail());

        const byJob = await sb.attemptsByJob();
        assert.equal(byJob.size, TOTAL);
        const byTenant = new Map<string, AttemptRow[]>();
        const jobs = await sb.storage.jobs.list({ limit: TOTAL + 10 });
        for (const j of jobs) {
          const attempts = byJob.get(j.id) ?? [];
          assert.deepEqual(attempts.map((a) => a.outcome), ['succeeded'], `job ${j.id}: one attempt, never claimed and handed back`);
          byTenant.set(j.concurrencyKey ?? '', [...(byTenant.get(j.concurrencyKey ?? '') ?? []), ...attempts]);
        }
        assert.equal(byTenant.size, TENANTS);
        for (const [tenant, attempts] of byTenant) assert.ok(maxOverlap(attempts) <= LIMIT, `tenant ${tenant}: ${maxOverlap(attempts)} attempts overlapped in the history`);
        assert.equal(new Set(sb.outboxLines().map((l) => l.key)).size, TOTAL, 'every send once');
      } finally {
        await killAll();
        await sb.close();
      }
    });
  });
}
