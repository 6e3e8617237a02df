/**
 * What PostgreSQL's backends wait on during a drain by worker processes:
 *   node --import tsx src/tools/waits-pg.ts [system id] [n] [processes] [concurrency]
 * e.g. `waits-pg.ts leasehold-postgres 40000 2 10` and `… graphile-batched 40000 2 10`.
 * Enqueues n jobs, starts the worker processes (src/child.ts, as the harness does), samples
 * pg_stat_activity every 5 ms until every job ran, and prints the rate and, over the samples,
 * the share of busy backends (state active) per wait event ("cpu" = not waiting), and the WAL
 * written per job.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { PG_URL, checkpointPostgres, nowMs, sleep } from '../common.ts';
import { findSystem } from '../systems/index.ts';

const [id = 'leasehold-postgres', nArg = '40000', procsArg = '2', cArg = '10'] = process.argv.slice(2);
const n = Number(nArg);
const sys = findSystem(id);
await sys.reset();
await checkpointPostgres();
const p = await sys.producer();
const items = Array.from({ length: n }, (_, i) => ({ i }));
for (let i = 0; i < n; i += 1000) await p.enqueueBulk(items.slice(i, i + 1000));

const childPath = join(dirname(fileURLToPath(import.meta.url)), '..', 'child.ts');
const done = new Map<ChildProcess, number>();
const children = await Promise.all(
  Array.from({ length: Number(procsArg) }, () => {
    const cp = fork(childPath, [id, cArg, 'drain'], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    done.set(cp, 0);
    return new Promise<ChildProcess>((resolve) =>
      cp.on('message', (m: { ready?: boolean; done?: number }) => {
        if (m.ready) resolve(cp);
        if (m.done !== undefined) done.set(cp, Math.max(done.get(cp) ?? 0, m.done));
      }),
    );
  }),
);
const probe = new pg.Client({ connectionString: PG_URL, application_name: 'waits-probe' });
await probe.connect();
const counts = new Map<string, number>();
let samples = 0;
const lsn = async (): Promise<string> => String((await probe.query('SELECT pg_current_wal_lsn() AS l')).rows[0].l);
const commits = async (): Promise<number> => Number((await probe.query('SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()')).rows[0].xact_commit);
const lsn0 = await lsn();
const commits0 = await commits();
const t0 = nowMs();
for (const cp of children) cp.send({ go: true });
const total = () => [...done.values()].reduce((a, b) => a + b, 0);
while (total() < n && nowMs() - t0 < 60_000) {
  // busy backends of this database other than this probe, by what they wait on
  const { rows } = await probe.query(
    `SELECT coalesce(wait_event_type || ':' || wait_event, 'cpu') AS w, count(*)::int AS k FROM pg_stat_activity
     WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid() AND backend_type = 'client backend' GROUP BY 1`,
  );
  for (const r of rows as { w: string; k: number }[]) counts.set(r.w, (counts.get(r.w) ?? 0) + r.k);
  samples++;
  await sleep(5);
}
while ((await p.remaining()) > 0) await sleep(5);
const wall = nowMs() - t0;
const lsn1 = await lsn();
// the probe's own statements commit too (one per sample, a few around): not counted
const jobCommits = (await commits()) - commits0 - samples - 2;
const walBytes = Number((await probe.query('SELECT pg_wal_lsn_diff($1, $2) AS d', [lsn1, lsn0])).rows[0].d);
const busy = [...counts.values()].reduce((a, b) => a + b, 0);
console.log(`${id}: ${n} jobs, ${procsArg} × c=${cArg}: ${Math.round(n / (wall / 1000))} jobs/s; ${samples} samples, ${(busy / samples).toFixed(2)} busy backends on average; WAL ${Math.round(walBytes / n)} bytes/job; ${(n / Math.max(1, jobCommits)).toFixed(0)} jobs per commit (${lsn0}..${lsn1}: pg_waldump --stats=record -s … -e … breaks it down)`);
for (const [w, k] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`  ${((100 * k) / busy).toFixed(1).padStart(5)}%  ${w}`);
await probe.end();
await p.close();
// stop the workers and wait for them: a worker left running would drain the next run's jobs
await Promise.all(
  children.map(
    (cp) =>
      new Promise<void>((resolve) => {
        const kill = setTimeout(() => cp.kill('SIGKILL'), 10_000);
        cp.once('exit', () => {
          clearTimeout(kill);
          resolve();
        });
        cp.send({ stop: true });
      }),
  ),
);
process.exit(0);
