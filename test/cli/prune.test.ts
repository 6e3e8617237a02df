/**
 * `leasehold prune` on SQLite, PostgreSQL and MySQL/MariaDB: it removes finished jobs past
 * retention and nothing else (recent ones, queued, running and failed jobs, the effect ledger
 * stay); `--dry-run` counts per status and removes nothing; `--succeeded` / `--dead` set the ages.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CliDb, SEED_EFFECT, dbTargets, goneOf, useRetentionDb } from './support-dbs.js';

interface PruneJson {
  dryRun: boolean;
  olderThanMs: Record<string, number>;
  jobs: { succeeded: number; dead: number; cancelled: number };
  total: number;
}

for (const target of await dbTargets('cli: leasehold prune')) {
  describe(`leasehold prune (${target.kind})`, { skip: target.skip }, () => {
    let db: CliDb;
    let ids: Record<string, string>;
    useRetentionDb(target, (opened) => ({ db, ids } = opened));

    it('--dry-run reports per status what would go and removes nothing', async () => {
      const r = await db.run(['prune', '--dry-run']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /would prune 3 job\(s\); dry run, nothing removed/);
      assert.match(r.stdout, /succeeded\s+7d\s+1\n/);
      assert.match(r.stdout, /dead\s+30d\s+1\n/);
      assert.match(r.stdout, /cancelled\s+30d\s+1/);

      const j = await db.run(['prune', '--dry-run', '--json', '--dead', '5d', '--succeeded', '36h']);
      assert.equal(j.code, 0, j.stderr);
      assert.deepEqual(JSON.parse(j.stdout) as PruneJson, {
        dryRun: true,
        olderThanMs: { succeeded: 36 * 3_600_000, dead: 5 * 86_400_000, cancelled: 5 * 86_400_000 },
        jobs: { succeeded: 2, dead: 2, cancelled: 1 },
        total: 5,
      });
      const never = JSON.parse((await db.run(['prune', '--dry-run', '--json', '--succeeded', 'never'])).stdout) as PruneJson;
      assert.deepEqual(never.jobs, { succeeded: 0, dead: 1, cancelled: 1 });
      assert.deepEqual(await goneOf(db.storage, ids), [], 'a dry run removes nothing');
    });

    it('removes the jobs past retention, with their attempts, and nothing else', async () => {
      const r = await db.run(['prune', '--json']);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual((JSON.parse(r.stdout) as PruneJson).jobs, { succeeded: 1, dead: 1, cancelled: 1 });
      assert.deepEqual(await goneOf(db.storage, ids), ['oldCancelled', 'oldDead', 'oldOk']);
      assert.deepEqual(await db.storage.attempts.list({ jobId: ids.oldOk! }), []);
      assert.equal((await db.storage.attempts.list({ jobId: ids.midOk! })).length, 1, 'a kept job keeps its history');
      assert.equal((await db.storage.jobs.get({ id: ids.running! }))?.status, 'running');
      assert.equal((await db.storage.jobs.get({ id: ids.failed! }))?.status, 'failed');
      assert.equal((await db.storage.jobs.get({ id: ids.queued! }))?.status, 'queued');
      const effect = await db.storage.effects.get({ key: SEED_EFFECT });
      assert.deepEqual([effect?.jobId, effect?.result], [ids.oldOk, { sent: true }], 'the effect ledger outlives its job');
    });

    it('with shorter ages, in small batches, takes the rest; then there is nothing left to prune', async () => {
      const r = await db.run(['prune', '--succeeded', '1d', '--dead', '1d', '--batch-size', '1', '--pause-ratio', '0.5']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /pruned 2 job\(s\):/);
      assert.deepEqual(await goneOf(db.storage, ids), ['midDead', 'midOk', 'oldCancelled', 'oldDead', 'oldOk']);
      const again = JSON.parse((await db.run(['prune', '--dry-run', '--json', '--succeeded', '1d', '--dead', '1d'])).stdout) as PruneJson;
      assert.equal(again.total, 0);
    });

    it('a bad age or pause ratio is bad input: exit 2, nothing removed', async () => {
      const r = await db.run(['prune', '--succeeded', 'soon']);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /expected a duration/);
      const ratio = await db.run(['prune', '--pause-ratio', '-1']);
      assert.equal(ratio.code, 2);
      assert.match(ratio.stderr, /expected a number >= 0/);
      assert.deepEqual(await goneOf(db.storage, ids), ['midDead', 'midOk', 'oldCancelled', 'oldDead', 'oldOk']);
    });
  });
}
