/**
 * Dropped connections: while four workers drain a few thousand jobs, every server connection
 * of theirs is killed, several times (PostgreSQL: pg_terminate_backend on the backends tagged
 * with the sandbox's application_name; MySQL/MariaDB: KILL CONNECTION on every connection to
 * the sandbox's database). The run still completes: every job succeeded exactly once, the
 * ledger and the outbox hold one entry per job, nothing is left running, and each worker logs
 * the trouble once per episode ('claim.failed' … 'claim.recovered'), not in a tight loop.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { CliProcess } from './support.js';
import { SERVER_KINDS, Sandbox, dbTargets, killAll, pause, tally, verifyDrain, waitForSucceeded, waitUntil } from './support.js';

after(killAll);

const TOTAL = 3_000;
const BATCH = 1_000;
const WORKERS = 4;
const ROUNDS = 4;
const SPACING_MS = 750;

const targets = await dbTargets('process connection kill', SERVER_KINDS);

for (const { kind, server, skip } of targets) {
  describe(`process: every worker connection killed mid-drain (${kind})`, { skip }, () => {
    it(`${ROUNDS} rounds of kills: nothing lost, duplicated or stuck; errors logged once per episode`, { timeout: 600_000 }, async (t) => {
      const sb = await Sandbox.create(kind, server);
      try {
        // ~40 ms of work per job: 32 slots drain at most ~800 jobs/s, so the kill rounds land
        // mid-drain on any machine.
        for (let from = 0; from < TOTAL; from += BATCH) {
          await sb.client.enqueueMany(Array.from({ length: BATCH }, (_, k) => ({ type: 'work', payload: { sleepMs: 30 + ((from + k) % 20), effectKey: `send:${from + k}` } })));
        }
        const workers: CliProcess[] = await Promise.all(Array.from({ length: WORKERS }, () => sb.worker(['--concurrency', '8', '--lease', '5s'])));
        const startedAt = Date.now();
        await waitUntil('the drain is under way', async () => ((await sb.statusCounts()).succeeded ?? 0) >= 100, 30_000);

        const killed: number[] = [];
        const succeededAt: number[] = [];
        for (let round = 0; round < ROUNDS; round++) {
          killed.push(await sb.killConnections());
          succeededAt.push((await sb.statusCounts()).succeeded ?? 0);
          await pause(SPACING_MS);
        }
        t.diagnostic(`${kind}: connections killed per round: ${killed.join(', ')}; succeeded at each round: ${succeededAt.join(', ')}`);
        assert.ok(
          killed.every((n) => n >= WORKERS),
          `every round killed at least one connection per worker: ${killed.join(', ')}`,
        );
        assert.ok((succeededAt.at(-1) ?? TOTAL) < TOTAL, 'the kills landed while jobs were still being drained');

        await waitForSucceeded(sb, TOTAL, 20_000);
        t.diagnostic(`${kind}: ${WORKERS} workers drained ${TOTAL} jobs in ${Date.now() - startedAt} ms despite the kills`);
        for (const w of workers) w.signal('SIGTERM');
        for (const w of workers) assert.equal((await w.waitExit()).code, 0, w.tail());

        // The trouble shows in the logs once per episode, each followed by a recovery.
        for (const w of workers) {
          const failed = w.events('claim.failed').length;
          const recovered = w.events('claim.recovered').length;
          const errors = w.lines.filter((l) => l.level >= 50);
          const byEvent = new Map<string, number>();
          for (const l of w.lines.filter((x) => x.level >= 40)) byEvent.set(String(l.event), (byEvent.get(String(l.event)) ?? 0) + 1);
          const jobErrors = [...new Set(w.events('job.failed').map((l) => String(l.error).slice(0, 120)))];
          t.diagnostic(`${kind}: pid ${w.pid}: claim.failed ${failed}, claim.recovered ${recovered}; warn+ by event ${JSON.stringify(Object.fromEntries(byEvent))}; job errors ${JSON.stringify(jobErrors)}`);
          assert.ok(failed <= ROUNDS * 3, `pid ${w.pid}: claim.failed logged ${failed} times for ${ROUNDS} rounds`);
          assert.equal(recovered, failed, `pid ${w.pid}: every claim.failed episode ended with claim.recovered`);
          assert.ok(errors.length <= ROUNDS * 10, `pid ${w.pid}: ${errors.length} error lines for ${ROUNDS} rounds (a tight loop?)`);
        }

        // A send made twice: show what each worker logged about that job, for the failure message.
        const dupes = [...tally(sb.outboxLines().map((l) => l.jobId))].filter(([, n]) => n > 1).map(([id]) => id);
        if (dupes.length > 0) {
          const byJob = await sb.attemptsByJob();
          for (const id of dupes.slice(0, 3)) {
            const lines = workers.flatMap((w) => w.lines.filter((l) => l.jobId === id).map((l) => `${w.pid} ${l.time} ${l.event} ${JSON.stringify(l.err ?? l.error ?? l.msg)}`));
            t.diagnostic(`${kind}: job ${id} sent twice; attempts ${JSON.stringify(byJob.get(id))}\n${lines.sort().join('\n')}`);
          }
        }
        const audit = await verifyDrain(sb, TOTAL, new Set(workers.map((w) => w.workerId)));
        t.diagnostic(`${kind}: attempts beyond the first: ${audit.extraAttempts}; outcomes ${JSON.stringify(Object.fromEntries(audit.outcomes))}`);
      } finally {
        await killAll();
        await sb.close();
      }
    });
  });
}
