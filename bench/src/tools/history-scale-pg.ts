/**
 * PostgreSQL with a huge history (issue #26), in a database of its own (bench_history, created
 * and dropped here), two schemas migrated by leasehold itself: `empty` and `seeded`, the latter
 * holding `finished` succeeded jobs, each with its attempt row, written set-based.
 *   node --import tsx src/tools/history-scale-pg.ts [seed|drain|prune|all] [finished] [rounds] [--keep]
 * drain: DUE (100,000) no-op jobs drained by one Worker (c=10, this process), alternating the
 *   empty and the seeded schema round by round; before each, what earlier drains left is
 *   deleted, the due rows inserted, the tables vacuumed and analyzed and a checkpoint taken.
 * prune: this process claims and finishes (up to CLAIM_LIMIT, 10, jobs) every TICK_MS (5), timing
 *   each claim and finish; QUIET_MS (20 s) windows without a prune alternate with windows during
 *   a prune of the oldest PRUNE_ROWS (1,000,000) succeeded jobs: Retention as `leasehold prune`
 *   runs it, in a process forked and connected beforehand (PRUNE_BATCH: its batch size; PRUNE_PAUSE:
 *   its pauseRatio).
 * The copy under test: BENCH_LEASEHOLD_SRC (src/index.ts or dist/index.js), as for seeded.ts.
 * seed: only the seeding (with --keep, for later runs).
 * --keep leaves the database for the next run (its seeded rows are topped up, not rewritten).
 */
import { fork } from 'node:child_process';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { PG_URL, nowMs, percentile, sleep, stats } from '../common.ts';
import { lh } from './seeded.ts';

process.env.LEASEHOLD_LOG_LEVEL ??= 'silent';
const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const keep = process.argv.includes('--keep');
const [mode = 'all', finArg = '10000000', roundsArg = '3'] = args;
const finished = Number(finArg);
const rounds = Number(roundsArg);
const due = Number(process.env.DUE ?? 100_000);
const pruneRows = Number(process.env.PRUNE_ROWS ?? 1_000_000);
const quietMs = Number(process.env.QUIET_MS ?? 20_000);
const TICK_MS = Number(process.env.TICK_MS ?? 5);
const CLAIM_LIMIT = Number(process.env.CLAIM_LIMIT ?? 10);
const DB = process.env.HISTORY_DB ?? 'bench_history';
const dbUrl = PG_URL.replace(/\/[^/?]*(\?.*)?$/, `/${DB}`);
const schemaUrl = (s: string) => `${dbUrl}?schema=${s}`;
const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..', '..');

if (mode === 'prune-child') {
  // the Retention of the copy under test, beside its index (src/index.ts or dist/index.js)
  const lib = process.env.BENCH_LEASEHOLD_SRC || join(repo, 'dist', 'index.js');
  const { Retention } = (await import(join(dirname(lib), 'runtime', `retention${extname(lib)}`))) as typeof import('../../../src/runtime/retention.ts');
  const storage = await lh.openStorage(schemaUrl('seeded'));
  // connected before the clock starts
  await storage.jobs.get({ id: '1' });
  process.send?.({ ready: true });
  const { olderThanMs } = await new Promise<{ olderThanMs: number }>((resolve) => process.once('message', resolve));
  const batchSize = process.env.PRUNE_BATCH ? Number(process.env.PRUNE_BATCH) : undefined;
  const pauseRatio = process.env.PRUNE_PAUSE ? Number(process.env.PRUNE_PAUSE) : undefined;
  const report = await new Retention(storage, { succeededMs: olderThanMs, deadMs: false, maxBatches: Infinity, ...(batchSize ? { batchSize } : {}), ...(pauseRatio !== undefined ? { pauseRatio } : {}) }).prune();
  process.send?.({ total: report.total });
  await storage.close();
  process.exit(0);
}

const admin = new pg.Client({ connectionString: PG_URL });
await admin.connect();
const exists = (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [DB])).rowCount === 1;
if (!exists) await admin.query(`CREATE DATABASE ${DB}`);
const c = new pg.Client({ connectionString: dbUrl });
await c.connect();
const log = (s: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${s}`);

for (const s of ['empty', 'seeded']) {
  const st = await lh.openStorage(schemaUrl(s));
  await st.migrate();
  await st.close();
}

/** Top the seeded schema up to `finished` succeeded jobs: finished 1 to 5.6 days ago (inside the default 7-day retention), oldest first by id. */
async function seed(): Promise<void> {
  seededUpTo = await lastSeeded();
  await clearDrained();
  const have = Number((await c.query(`SELECT count(*) AS n FROM seeded.jobs WHERE status = 'succeeded'`)).rows[0].n);
  const t0 = nowMs();
  for (let from = have; from < finished; from += 1_000_000) {
    const n = Math.min(1_000_000, finished - from);
    await c.query(`INSERT INTO seeded.jobs (queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms,
        started_at, finished_at, created_at, updated_at)
      SELECT 'default', 'noop', '{"i":1}'::json, 'succeeded', 0, t, 1, 5, 300000, 3600000, t, t + interval '5 ms', t, t + interval '5 ms'
      FROM (SELECT now() - interval '1 day' - ($2::bigint - g) * interval '40 ms' AS t FROM generate_series($1::bigint, $1::bigint + $3::bigint - 1) g) x`,
      [from, finished, n]);
    log(`seeded ${(from + n).toLocaleString('en-US')} jobs`);
  }
  if (have < finished) {
    await c.query(`INSERT INTO seeded.job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, outcome, wait_ms)
      SELECT id, 1, 'seed', md5(id::text), started_at, finished_at, 5, 'succeeded', 0 FROM seeded.jobs j
      WHERE status = 'succeeded' AND NOT EXISTS (SELECT 1 FROM seeded.job_attempts a WHERE a.job_id = j.id)`);
    log(`attempt rows written; ${((nowMs() - t0) / 1000).toFixed(0)} s`);
  }
  seededUpTo = await lastSeeded();
  await tidy();
  const size = (await c.query(`SELECT pg_size_pretty(pg_database_size(current_database())) AS s`)).rows[0].s;
  log(`database ${size}`);
}

/** The last id the seeding wrote (its rows were created a day or more ago). */
const lastSeeded = () => c.query(`SELECT coalesce(max(id), 0) AS id FROM seeded.jobs WHERE created_at < now() - interval '12 hours'`).then((r) => String(r.rows[0].id));
let seededUpTo = '0';

/** Back to the history alone: the empty schema emptied, the seeded one without the rows earlier drains left. */
async function clearDrained(): Promise<void> {
  await c.query('TRUNCATE empty.jobs, empty.job_attempts');
  await c.query('DELETE FROM seeded.job_attempts WHERE job_id > $1::bigint', [seededUpTo]);
  await c.query('DELETE FROM seeded.jobs WHERE id > $1::bigint', [seededUpTo]);
}

/** As a table autovacuum keeps would be: vacuumed, analyzed, and a checkpoint behind it. */
async function tidy(): Promise<void> {
  for (const s of ['empty', 'seeded']) for (const t of ['jobs', 'job_attempts']) await c.query(`VACUUM ANALYZE ${s}.${t}`);
  await c.query('CHECKPOINT');
}

/** `n` queued no-op jobs due within the last minute, as the harness's spike seeds them. */
async function enqueueDue(s: string, n: number): Promise<void> {
  await c.query(`INSERT INTO ${s}.jobs (queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms, created_at, updated_at)
    SELECT 'default', 'noop', '{"i":1}'::json, 'queued', 0, date_trunc('milliseconds', now()) - (g % 60000) * interval '1 ms', 0, 5, 300000, 3600000, now(), now()
    FROM generate_series(1, $1::int) g`, [n]);
}

const unfinished = (s: string) => c.query(`SELECT (SELECT count(*) FROM ${s}.jobs WHERE status IN ('queued','failed')) + (SELECT count(*) FROM ${s}.jobs WHERE status = 'running') AS n`).then((r) => Number(r.rows[0].n));

/** Drain `due` jobs from schema `s` with one Worker, c=10; jobs/s until the last finish landed. */
async function drainOnce(s: string): Promise<number> {
  let ran = 0;
  const storage = await lh.openStorage(schemaUrl(s));
  const noop = lh.defineJob({ type: 'noop', maxAttempts: 5, handler: () => void ran++ });
  const w = new lh.Worker({ storage, jobs: [noop], concurrency: 10 });
  const t0 = nowMs();
  await w.start();
  while (ran < due && nowMs() - t0 < 120_000) await sleep(2);
  while ((await unfinished(s)) > 0 && nowMs() - t0 < 130_000) await sleep(5);
  const el = nowMs() - t0;
  await w.stop({ deadlineMs: 5_000 });
  await storage.close();
  if (ran < due) throw new Error(`drain of ${s} timed out: ${ran}/${due}`);
  return due / (el / 1000);
}

async function drainRounds(): Promise<void> {
  const rates: Record<string, number[]> = { empty: [], seeded: [] };
  for (let r = 0; r < rounds; r++) {
    for (const s of r % 2 ? ['seeded', 'empty'] : ['empty', 'seeded']) {
      await clearDrained();
      await enqueueDue(s, due);
      await tidy();
      const rate = await drainOnce(s);
      rates[s]?.push(rate);
      log(`round ${r + 1} ${s}: ${Math.round(rate)} jobs/s`);
    }
  }
  const med = (s: string) => stats(rates[s] ?? []).median;
  log(`drain ${due} due, median of ${rounds}: empty ${Math.round(med('empty'))}, with ${finished.toLocaleString('en-US')} finished ${Math.round(med('seeded'))} jobs/s; ratio ${(med('seeded') / med('empty')).toFixed(2)}×`);
  log(`each: empty ${rates.empty?.map(Math.round).join(', ')}; seeded ${rates.seeded?.map(Math.round).join(', ')}`);
}

/**
 * `leasehold prune` of what is older than `olderThanMs`, in another process: what the CLI runs
 * (Retention, no per-run budget), started and connected before the clock starts, so neither its
 * start-up nor its compilation is counted as the prune's.
 */
async function pruneChild(): Promise<{ go: (olderThanMs: number) => Promise<{ total: number }> }> {
  const cp = fork(fileURLToPath(import.meta.url), ['prune-child'], { execArgv: ['--import', 'tsx'], cwd: join(here, '..', '..'), stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  await new Promise((resolve) => cp.once('message', resolve));
  return {
    go: (olderThanMs) => {
      cp.send({ olderThanMs });
      return new Promise((resolve) => cp.once('message', (m: { total: number }) => (cp.disconnect(), resolve(m))));
    },
  };
}


interface Timings { claim: number[]; finish: number[]; claimed: number }

/** Claim and finish every TICK_MS until `until` resolves; the time of each claim and finish. */
async function claimLoop(storage: Awaited<ReturnType<typeof lh.openStorage>>, until: Promise<unknown>): Promise<Timings> {
  let over = false;
  void until.then(() => (over = true), () => (over = true));
  const t: Timings = { claim: [], finish: [], claimed: 0 };
  let next = nowMs();
  while (!over) {
    const a = nowMs();
    const jobs = await storage.leases.claim({ workerId: 'history-bench', types: ['noop'], queues: null, limit: CLAIM_LIMIT, leaseMs: 30_000 });
    const b = nowMs();
    t.claim.push(b - a);
    t.claimed += jobs.length;
    if (jobs.length > 0) {
      await storage.leases.finish({ items: jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken, status: 'succeeded' as const, attempt: { outcome: 'succeeded' as const } })) });
      t.finish.push(nowMs() - b);
    }
    next += TICK_MS;
    const wait = next - nowMs();
    if (wait > 0) await sleep(wait);
    else next = nowMs();
  }
  return t;
}

const summary = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, p50: percentile(s, 50), p99: percentile(s, 99), max: s[s.length - 1] ?? NaN };
};
const show = (label: string, t: Timings) => {
  const cl = summary(t.claim);
  const fi = summary(t.finish);
  log(`${label}: ${cl.n} claims (${t.claimed} jobs): claim p50 ${cl.p50.toFixed(2)} p99 ${cl.p99.toFixed(2)} max ${cl.max.toFixed(1)} ms; finish p50 ${fi.p50.toFixed(2)} p99 ${fi.p99.toFixed(2)} max ${fi.max.toFixed(1)} ms`);
  return { cl, fi };
};

async function pruneRounds(): Promise<void> {
  const needed = Math.ceil(((rounds + 1) * quietMs + rounds * 120_000) / TICK_MS) * CLAIM_LIMIT;
  await clearDrained();
  await enqueueDue('seeded', Math.min(needed, 1_000_000));
  await tidy();
  const storage = await lh.openStorage(schemaUrl('seeded'));
  const quiet: Timings = { claim: [], finish: [], claimed: 0 };
  const during: Timings = { claim: [], finish: [], claimed: 0 };
  const add = (to: Timings, t: Timings) => (to.claim.push(...t.claim), to.finish.push(...t.finish), (to.claimed += t.claimed));
  for (let r = 0; r < rounds; r++) {
    const q = await claimLoop(storage, sleep(quietMs));
    show(`round ${r + 1} without a prune`, q);
    add(quiet, q);
    // the finished_at past which exactly pruneRows succeeded jobs lie: the oldest pruneRows
    const edge = (await c.query(`SELECT extract(epoch FROM now() - finished_at) * 1000 AS age FROM seeded.jobs WHERE finished_at IS NOT NULL AND status = 'succeeded' ORDER BY finished_at OFFSET $1::int LIMIT 1`, [pruneRows - 1])).rows[0];
    const child = await pruneChild();
    const t0 = nowMs();
    const prune = child.go(Math.floor(Number(edge.age)) - 1);
    const t = await claimLoop(storage, prune);
    const out = await prune;
    add(during, t);
    show(`round ${r + 1} during a prune of ${out.total.toLocaleString('en-US')} jobs (${((nowMs() - t0) / 1000).toFixed(1)} s)`, t);
  }
  await storage.close();
  const q = show('all without a prune', quiet);
  const d = show('all during a prune', during);
  log(`claim p99 during ÷ without: ${(d.cl.p99 / q.cl.p99).toFixed(2)}×; p50 ${(d.cl.p50 / q.cl.p50).toFixed(2)}×; finish p99 ${(d.fi.p99 / q.fi.p99).toFixed(2)}×`);
}

try {
  await seed();
  if (mode === 'drain' || mode === 'all') await drainRounds();
  if (mode === 'prune' || mode === 'all') await pruneRounds();
} finally {
  await c.end();
  if (!keep) await admin.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  await admin.end();
}
process.exit(0);
