/**
 * `leasehold tick` prunes as `leasehold worker` does, once per run, on SQLite, PostgreSQL and
 * MySQL/MariaDB: finished jobs past retention go, nothing else does (recent ones, queued,
 * running and failed jobs, the effect ledger); `--retain-succeeded` / `--retain-dead` set the
 * ages (`never` keeps), `--no-prune` turns it off.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { type CliDb, SEED_EFFECT, dbTargets, goneOf, useRetentionDb } from './support-dbs.js';
import { FIXTURES, logLines } from './support.js';

const TICK = ['tick', '--handlers', path.join(FIXTURES, 'handlers.ts'), '--max-seconds', '20', '--poll', '50ms'];

for (const target of await dbTargets('cli: leasehold tick prunes')) {
  describe(`leasehold tick prunes (${target.kind})`, { skip: target.skip }, () => {
    let db: CliDb;
    let ids: Record<string, string>;
    useRetentionDb(target, (opened) => ({ db, ids } = opened));

    it('--no-prune: a tick leaves every job', async () => {
      const r = await db.run([...TICK, '--no-prune']);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(await goneOf(db.storage, ids), []);
      assert.equal(logLines(r.stdout).filter((l) => l.event === 'jobs.pruned').length, 0);
    });

    it('by default: succeeded jobs over 7 days, dead and cancelled over 30 go; the rest and the effect ledger stay', async () => {
      const r = await db.run(TICK);
      assert.equal(r.code, 0, r.stderr);
      const pruned = logLines(r.stdout).find((l) => l.event === 'jobs.pruned');
      assert.deepEqual([pruned?.count, pruned?.succeeded, pruned?.dead, pruned?.cancelled], [3, 1, 1, 1], r.stdout);
      assert.deepEqual(await goneOf(db.storage, ids), ['oldCancelled', 'oldDead', 'oldOk']);
      for (const name of ['queued', 'running', 'failed'] as const) {
        assert.equal((await db.storage.jobs.get({ id: ids[name]! }))?.status, name, `the ${name} job is untouched`);
      }
      assert.equal((await db.storage.effects.get({ key: SEED_EFFECT }))?.jobId, ids.oldOk);
    });

    it('--retain-succeeded 1d --retain-dead never: the 2-day-old succeeded job goes, the 10-day-old dead one stays', async () => {
      const r = await db.run([...TICK, '--retain-succeeded', '1d', '--retain-dead', 'never']);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(await goneOf(db.storage, ids), ['midOk', 'oldCancelled', 'oldDead', 'oldOk']);
      assert.ok(await db.storage.jobs.get({ id: ids.recentOk! }));
    });
  });
}
