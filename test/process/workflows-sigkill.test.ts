/**
 * Workflows under fire: 200 workflows of 10 jobs (a root, eight jobs after it, a join after
 * those), each a batch with a callback, drained by four worker processes while one of them is
 * SIGKILLed every 2 s (and replaced). Every job and every callback ends succeeded; each batch
 * enqueued one callback, whose send happened once; and from the attempt history, no job of a
 * workflow started before every job it depends on had finished.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { CliProcess } from './support.js';
import { Sandbox, dbTargets, killAll, pause, waitUntil } from './support.js';

after(killAll);

const FLOWS = 200;
const MIDDLE = 8;
const WORKERS = 4;
const KILL_EVERY_MS = 2_000;

const targets = await dbTargets('process workflows sigkill');

for (const { kind, server, skip } of targets) {
  describe(`process: 200 workflows with batch callbacks, a worker SIGKILLed every 2 s (${kind})`, { skip }, () => {
    it('every workflow completes, each callback is enqueued and sent once, no job starts before its parents finished', { timeout: 600_000 }, async (t) => {
      const sb = await Sandbox.create(kind, server);
      try {
        const parentsOf = new Map<string, string[]>();
        const batches: string[] = [];
        for (let f = 0; f < FLOWS; f++) {
          const work = (key: string, dependsOn: string[] = []) => ({ key, type: 'work' as const, payload: { sleepMs: 40 + (f % 40), effectKey: `f${f}:${key}` }, dependsOn });
          const mids = Array.from({ length: MIDDLE }, (_, i) => `m${i}`);
          const batch = await sb.client.batches.create({ onComplete: { type: 'work', payload: { effectKey: `callback:${f}` } } });
          const jobs = await sb.client.batches.add(batch.id, [work('root'), ...mids.map((m) => work(m, ['root'])), work('join', mids)]);
          await sb.client.batches.close(batch.id);
          batches.push(batch.id);
          const id = (i: number) => jobs[i]!.id;
          for (let i = 1; i <= MIDDLE; i++) parentsOf.set(id(i), [id(0)]);
          parentsOf.set(id(MIDDLE + 1), Array.from({ length: MIDDLE }, (_, i) => id(i + 1)));
        }
        const workers: CliProcess[] = await Promise.all(Array.from({ length: WORKERS }, () => sb.worker(['--concurrency', '8'])));
        const startedAt = Date.now();
        let kills = 0;
        const done = async () => (await Promise.all(batches.map((b) => sb.client.batches.get(b)))).every((b) => b?.state === 'done');
        while (!(await done()) && Date.now() - startedAt < 300_000) {
          await pause(KILL_EVERY_MS);
          const victim = workers.splice(kills % workers.length, 1)[0]!;
          victim.signal('SIGKILL');
          await victim.waitExit();
          kills++;
          workers.push(await sb.worker(['--concurrency', '8']));
        }
        const callbacksDone = async () => {
          const counts = await sb.statusCounts();
          return (counts.succeeded ?? 0) === FLOWS * (MIDDLE + 3) ? counts : null;
        };
        const counts = await waitUntil('every job and callback succeeded', callbacksDone, 120_000, 200);
        t.diagnostic(`${kind}: ${FLOWS * (MIDDLE + 3)} jobs in ${Date.now() - startedAt} ms with ${kills} workers SIGKILLed; ${JSON.stringify(counts)}`);
        for (const w of workers) w.signal('SIGTERM');
        for (const w of workers) await w.waitExit();

        const all = [];
        for (let page = await sb.storage.jobs.list({ type: 'work', limit: 500 }); page.length > 0; page = await sb.storage.jobs.list({ type: 'work', limit: 500, beforeId: page.at(-1)!.id })) all.push(...page);
        assert.equal(all.length, FLOWS * (MIDDLE + 3));
        assert.deepEqual(new Set(all.map((j) => j.status)), new Set(['succeeded']));
        const callbacks = all.filter((j) => j.idempotencyKey?.startsWith('leasehold:batch:'));
        assert.deepEqual(callbacks.map((j) => j.idempotencyKey).sort(), batches.map((b) => `leasehold:batch:${b}`).sort(), 'one callback per batch');
        for (const b of batches) assert.equal((await sb.client.batches.get(b))!.succeeded, MIDDLE + 2);
        const sends = sb.outboxLines().filter((l) => l.key.startsWith('callback:'));
        assert.equal(sends.length, FLOWS, 'each callback sent once');
        assert.equal(new Set(sends.map((l) => l.key)).size, FLOWS);

        const byId = new Map(all.map((j) => [j.id, j]));
        let checked = 0;
        for (const [child, parents] of parentsOf) {
          const lastParentEnd = Math.max(...parents.map((p) => byId.get(p)!.finishedAt!.getTime()));
          for (const a of await sb.storage.attempts.list({ jobId: child })) {
            assert.ok(a.startedAt.getTime() >= lastParentEnd, `job ${child} attempt ${a.attempt} started before its parents finished`);
            checked++;
          }
        }
        t.diagnostic(`${kind}: ${checked} attempts of ${parentsOf.size} dependent jobs checked against their parents' finish times`);
      } finally {
        await killAll();
        await sb.close();
      }
    });
  });
}
