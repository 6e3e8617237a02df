/**
 * What only the PostgreSQL adapter has to prove about its leases: a finish and a heartbeat over
 * the same leases, sent in opposite orders, lock in one order; lease tokens are a fresh base per
 * claim and the job id; each attempt row records its own lease's worker; and error text with
 * NUL characters still lands.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { serverFor } from '../support/databases.js';
import { job, postgresFixtures } from './postgres-support.js';

const url = await serverFor('postgres', 'postgres specific: leases');

const succeed = (j: { id: string; leaseToken: string }) => ({ id: j.id, leaseToken: j.leaseToken, status: 'succeeded' as const, attempt: { outcome: 'succeeded' as const } });

describe('postgres specific: leases', { skip: url === null }, () => {
  const { fresh } = postgresFixtures(url);

  it('a batch of successes and a heartbeat over the same leases, sent in opposite orders, wait for each other instead of deadlocking', async () => {
    const s = fresh();
    await s.migrate();
    for (let round = 0; round < 16; round++) {
      await s.jobs.insert({ jobs: Array.from({ length: 200 }, () => job('lock-order')) });
      const claimed = await s.leases.claim({ workerId: 'w', types: ['lock-order'], queues: null, limit: 200, leaseMs: 30_000 });
      assert.equal(claimed.length, 200);
      const [, finished] = await Promise.all([
        s.leases.heartbeat({ leases: claimed.map((j) => ({ id: j.id, leaseToken: j.leaseToken })), leaseMs: 30_000 }),
        s.leases.finish({ items: [...claimed].reverse().map(succeed) }),
      ]);
      assert.equal(finished.filter((r) => r.applied).length, 200, `round ${round}: every success landed`);
    }
  });

  it('lease tokens are a fresh base per claim and the id; the row holds what the worker computed', async () => {
    const s = fresh();
    await s.migrate();
    await s.jobs.insert({ jobs: [job('tokens'), job('tokens'), job('tokens')] });
    const [x, y] = await s.leases.claim({ workerId: 'w', types: ['tokens'], queues: null, limit: 2, leaseMs: 30_000 });
    const base = x!.leaseToken.slice(0, x!.leaseToken.indexOf('.'));
    assert.match(base, /^[A-Za-z0-9_-]{22}$/, '128 random bits, base64url');
    assert.equal(x!.leaseToken, `${base}.${x!.id}`);
    assert.equal(y!.leaseToken, `${base}.${y!.id}`);
    assert.equal((await s.jobs.get({ id: x!.id }))?.leaseToken, x!.leaseToken);
    const [done] = await s.leases.finish({ items: [{ id: x!.id, leaseToken: x!.leaseToken, status: 'failed', runAfterMs: 0, attempt: { outcome: 'failed' } }] });
    assert.equal(done?.applied, true);
    const again = (await s.leases.claim({ workerId: 'w', types: ['tokens'], queues: null, limit: 10, leaseMs: 30_000 })).find((j) => j.id === x!.id);
    assert.ok(again, 'the failed job is claimed again');
    assert.notEqual(again.leaseToken, x!.leaseToken, 'a new claim of the same job gets a new base');
  });

  it("each attempt row records its own lease's worker, whichever storage or worker finishes the batch", async () => {
    const s = fresh();
    await s.migrate();
    const other = fresh(s.schema);
    await s.jobs.insert({ jobs: Array.from({ length: 12 }, () => job('who')) });
    const claim = (on: typeof s, workerId: string) => on.leases.claim({ workerId, types: ['who'], queues: null, limit: 3, leaseMs: 30_000 });
    const [a, b, c, d] = [await claim(s, 'wa'), await claim(s, 'wb'), await claim(other, 'wc'), await claim(s, 'wa')];
    for (const [on, batch] of [[s, a], [other, [...b, ...d]], [s, c]] as const) {
      assert.deepEqual((await on.leases.finish({ items: batch.map(succeed) })).map((r) => r.applied), batch.map(() => true));
    }
    for (const [jobs, worker] of [[a, 'wa'], [b, 'wb'], [c, 'wc'], [d, 'wa']] as const) {
      for (const j of jobs) {
        const attempts = await s.attempts.list({ jobId: j.id });
        assert.deepEqual(attempts.map((x) => [x.workerId, x.leaseToken, x.outcome]), [[worker, j.leaseToken, 'succeeded']], `job ${j.id}`);
      }
    }
    // a lease lost to another claim does not land, and leaves the new attempt running
    await s.jobs.insert({ jobs: [job('who')] });
    const [lost] = await claim(s, 'wa');
    await s.leases.finish({ items: [{ id: lost!.id, leaseToken: lost!.leaseToken, status: 'failed', runAfterMs: 0, attempt: { outcome: 'failed' } }] });
    const [retaken] = await claim(s, 'wb');
    assert.equal(retaken?.id, lost!.id);
    assert.deepEqual((await s.leases.finish({ items: [succeed(lost!)] })).map((r) => r.applied), [false]);
    assert.deepEqual((await s.attempts.list({ jobId: lost!.id })).map((x) => [x.workerId, x.outcome]), [['wa', 'failed'], ['wb', 'running']]);
  });

  it('error text with NUL characters (which PostgreSQL text cannot hold) still lands, as U+FFFD', async () => {
    const s = fresh();
    await s.migrate();
    await s.jobs.insert({ jobs: [job('nul')] });
    const [c] = await s.leases.claim({ workerId: 'w', types: ['nul'], queues: null, limit: 1, leaseMs: 30_000 });
    assert.ok(c);
    const err = { code: 'E\0', message: 'bad\0byte', stack: 'at\0x' };
    const [r] = await s.leases.finish({ items: [{ id: c.id, leaseToken: c.leaseToken, status: 'failed', runAfterMs: 0, error: err, attempt: { outcome: 'failed', error: err } }] });
    assert.equal(r?.applied, true);
    const j = await s.jobs.get({ id: c.id });
    assert.equal(j?.lastError, 'bad\uFFFDbyte');
    assert.equal((await s.attempts.list({ jobId: c.id }))[0]?.errorStack, 'at\uFFFDx');
  });
});
