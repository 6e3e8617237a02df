/**
 * leasehold side by side with its peers, in one run on one machine.
 *
 *   npm run bench -- --db postgres|sqlite|mysql|all [--quick] [--repeats N] [--only id,id]
 *
 * Prints, per database, a table of workload × system with leasehold ÷ system, and writes every
 * raw measurement to bench/results/<timestamp>.json. Each drain runs in forked worker
 * processes on a freshly reset table and is timed from "go" (the worker starting) until every
 * job has run and the system's own tables show nothing left to do.
 *
 * Here: the options, the workloads and the order they run in. The forked workers are in
 * worker-processes.ts, what is recorded and the results file in results.ts, the per-database
 * table in table.ts, the targets in targets.ts.
 */
import { rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import type { Db, SystemDef } from './common.ts';
import { checkpointPostgres, chunks, nowMs, percentile, sleep, sqliteDir } from './common.ts';
import { log } from './log.ts';
import { M, record, summarize, writeResultsFile } from './results.ts';
import { allSystems } from './systems/index.ts';
import { table } from './table.ts';
import { targetsTable } from './targets.ts';
import type { Child } from './worker-processes.ts';
import { spawnChild, stopChildren, waitFor } from './worker-processes.ts';

const args = process.argv.slice(2);
const flag = (name: string) => args.includes(`--${name}`);
const opt = (name: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};

const quick = flag('quick');
const dbArg = opt('db') ?? 'all';
if (!['postgres', 'sqlite', 'mysql', 'all'].includes(dbArg)) {
  console.error('usage: npm run bench -- --db postgres|sqlite|mysql|all [--quick] [--repeats N] [--only id,id] [--no-spike]');
  process.exit(2);
}
const dbs: Db[] = dbArg === 'all' ? ['postgres', 'sqlite', 'mysql'] : [dbArg as Db];
const only = opt('only')?.split(',');
const cfg = {
  jobs: Number(opt('jobs') ?? (quick ? 300 : 20_000)),
  /** one-job-per-call enqueues per run on the server databases: each is one commit
   * (fsync-bound), so the rate does not depend on the count; 2,000 per run keeps the slowest
   * (~300/s) within the time budget. SQLite does all the jobs one by one (singleCount). */
  singleJobs: Number(opt('single-jobs') ?? (quick ? 50 : 2_000)),
  /** a drain still running after this long is stopped and its rate taken over the jobs done
   * (keeps --db all within 15 minutes on a busy 2-core machine) */
  drainCapMs: quick ? undefined : Number(opt('drain-cap-ms') ?? 6_000),
  repeats: Number(opt('repeats') ?? (quick ? 1 : 3)),
  latencyJobs: quick ? 20 : 500,
  latencyGapMs: 20,
  idleMs: quick ? 300 : 1_500,
  latencyWaitMs: quick ? 1_000 : 3_000,
  bulkChunk: 1_000,
  spike: !quick && !flag('no-spike'),
  spikeFinished: Number(opt('spike-finished') ?? 1_000_000),
  spikeDue: Number(opt('spike-due') ?? 100_000),
  spikeCapMs: Number(opt('spike-cap-ms') ?? 10_000),
  drainTimeoutMs: quick ? 20_000 : 120_000,
};

process.env.BENCH_SQLITE_DIR = join(os.tmpdir(), `leasehold-bench-${process.pid}`);
sqliteDir();

// ------------------------------------------------------------------------------ workloads

/**
 * One-job enqueues per run. SQLite commits without an fsync (WAL, synchronous=NORMAL): 2,000
 * of them last 50–100 ms, and the first calls' statement preparation and JIT warm-up were most
 * of that (leasehold 18,000–23,000 jobs/s over 2,000, 32,000 over 20,000; profile-enqueue.ts).
 * So on SQLite every system enqueues all `n` one at a time, as the issue's workload says.
 */
const singleCount = (db: Db, n: number): number => (db === 'sqlite' && !quick ? n : Math.min(cfg.singleJobs, n));

const payloads = (n: number) => Array.from({ length: n }, (_, i) => ({ i }));

/** Enqueue n jobs; returns jobs/s. */
async function enqueue(sys: SystemDef, n: number, mode: 'bulk' | 'single'): Promise<number> {
  const p = await sys.producer();
  try {
    const items = payloads(n);
    const t0 = nowMs();
    if (mode === 'bulk') for (const c of chunks(items, cfg.bulkChunk)) await p.enqueueBulk(c);
    else for (const x of items) await p.enqueueOne(x);
    return n / ((nowMs() - t0) / 1000);
  } finally {
    await p.close();
  }
}

/** Drain n queued jobs with `procs` worker processes at `concurrency` each; returns jobs/s. */
async function drain(sys: SystemDef, n: number, procs: number, concurrency: number, capMs = sys.drainCapMs ?? cfg.drainCapMs): Promise<{ rate: number; note?: string }> {
  const children = await Promise.all(Array.from({ length: procs }, () => spawnChild(sys, concurrency, 'drain')));
  const p = await sys.producer();
  try {
    const t0 = nowMs();
    for (const c of children) c.cp.send({ go: true });
    const limit = capMs ?? cfg.drainTimeoutMs;
    const sum = () => children.reduce((a, c) => a + c.done, 0);
    while (sum() < n && nowMs() - t0 < limit && !children.some((c) => c.error)) await sleep(2);
    if (children.some((c) => c.error)) throw new Error(`worker failed: ${children.find((c) => c.error)?.error}`);
    if (sum() < n) {
      const el = nowMs() - t0;
      if (capMs === undefined) throw new Error(`drain timed out: ${sum()}/${n} after ${Math.round(el)} ms`);
      return { rate: sum() / (el / 1000), note: `stopped at ${(el / 1000).toFixed(0)} s: ${sum()}/${n} done` };
    }
    // every handler ran; now wait until the completions have landed in the system's tables
    while ((await p.remaining()) > 0) {
      if (nowMs() - t0 > limit + 10_000) throw new Error('jobs ran but never completed');
      await sleep(5);
    }
    return { rate: n / ((nowMs() - t0) / 1000) };
  } finally {
    await p.close();
    await stopChildren(children);
  }
}

/** One idle worker (c=10); a job every 20 ms; enqueue→handler-start latency. */
async function latency(sys: SystemDef): Promise<{ p50: number; p95: number; p99: number; received: number }> {
  const [child] = await Promise.all([spawnChild(sys, 10, 'latency')]);
  const c = child as Child;
  const p = await sys.producer();
  try {
    const started = waitFor(c.cp, 'started', 30_000);
    c.cp.send({ go: true });
    await started;
    await sleep(cfg.idleMs);
    const t0 = nowMs();
    for (let i = 0; i < cfg.latencyJobs; i++) {
      const wait = t0 + i * cfg.latencyGapMs - nowMs();
      if (wait > 0) await sleep(wait);
      await p.enqueueOne({ t: nowMs(), i });
    }
    const until = nowMs() + cfg.latencyWaitMs;
    while (c.lats.length < cfg.latencyJobs && nowMs() < until) await sleep(10);
    const s = [...c.lats].sort((a, b) => a - b);
    return { p50: percentile(s, 50), p95: percentile(s, 95), p99: percentile(s, 99), received: s.length };
  } finally {
    await p.close();
    await stopChildren([c]);
  }
}

// ------------------------------------------------------------------------------ the run

/** One measurement; a failure (e.g. the shared server out of connections) is retried once, then skipped. */
async function step(label: string, fn: () => Promise<void>): Promise<void> {
  for (let attempt = 1; attempt <= 2; attempt++) {
    const t = nowMs();
    try {
      await fn();
      log(`  ${label} (${((nowMs() - t) / 1000).toFixed(1)} s)`);
      return;
    } catch (e) {
      log(`  ${label} FAILED${attempt === 1 ? ', retrying' : ', skipped'}: ${(e as Error).message.split('\n')[0]}`);
    }
  }
}

/** A freshly reset system, on a freshly checkpointed PostgreSQL (see checkpointPostgres). */
async function fresh(sys: SystemDef): Promise<void> {
  await sys.reset();
  if (sys.db === 'postgres') await checkpointPostgres();
}

async function round(sys: SystemDef, r: number): Promise<void> {
  const n = cfg.jobs;
  const jps = 'jobs/s';
  const note = (x: { note?: string }) => x.note;
  log(`${sys.db} ${sys.id} round ${r}`);
  if (quick) {
    // smoke mode: every system's enqueue paths, a drain and (leasehold only) the rest, tiny counts
    await step('single + bulk enqueue + drain c=10', async () => {
      await sys.reset();
      const few = Math.min(cfg.singleJobs, n);
      const single = await enqueue(sys, few, 'single');
      const bulk = await enqueue(sys, n - few, 'bulk');
      if (sys.timeEnqueue) {
        record(sys.db, sys.id, M.single, jps, single);
        record(sys.db, sys.id, M.bulk, jps, bulk);
      }
      const d = await drain(sys, n, 1, 10, sys.drainCapMs === undefined ? undefined : 1_500);
      record(sys.db, sys.id, M.c10, jps, d.rate, note(d));
    });
    if (sys.kind !== 'leasehold') return;
  }
  const throughput = !sys.latencyOnly && (r === 1 || !sys.contextOnly);
  if (!quick && throughput) await step('bulk enqueue + drain c=10', async () => {
    await fresh(sys);
    const rate = await enqueue(sys, n, 'bulk');
    if (sys.timeEnqueue) record(sys.db, sys.id, M.bulk, jps, rate);
    const d = await drain(sys, n, 1, 10);
    record(sys.db, sys.id, M.c10, jps, d.rate, note(d));
  });
  if (!quick && throughput) await step(sys.onlyC10 ? 'single enqueue' : 'single enqueue + drain c=50', async () => {
    await fresh(sys);
    const single = singleCount(sys.db, n);
    if (sys.timeEnqueue) record(sys.db, sys.id, M.single, jps, await enqueue(sys, single, 'single'));
    else await enqueue(sys, single, 'bulk');
    if (sys.onlyC10) return;
    if (n > single) await enqueue(sys, n - single, 'bulk');
    const d = await drain(sys, n, 1, 50);
    record(sys.db, sys.id, M.c50, jps, d.rate, note(d));
  });
  if (sys.onlyC10) return;
  if (throughput || quick) await step('drain 2 processes', async () => {
    await fresh(sys);
    await enqueue(sys, n, 'bulk');
    const d = await drain(sys, n, 2, 10);
    record(sys.db, sys.id, M.p2, jps, d.rate, note(d));
  });
  if (sys.latency && (r === 1 || sys.latencyEveryRound)) {
    await step('latency', async () => {
      await sys.reset();
      const l = await latency(sys);
      const nt = l.received < cfg.latencyJobs ? `only ${l.received}/${cfg.latencyJobs} jobs started within ${cfg.latencyWaitMs / 1000} s of the last enqueue` : undefined;
      record(sys.db, sys.id, M.p50, 'ms', l.p50, nt);
      record(sys.db, sys.id, M.p95, 'ms', l.p95, nt);
      record(sys.db, sys.id, M.p99, 'ms', l.p99, nt);
    });
  }
}

async function spike(sys: SystemDef): Promise<void> {
  if (!sys.seedSpike) return;
  for (const finished of [0, cfg.spikeFinished]) {
    await step(`spike: ${cfg.spikeDue} due, ${finished} finished`, async () => {
      await sys.reset();
      const t = nowMs();
      await sys.seedSpike?.(finished, cfg.spikeDue);
      log(`    seeded in ${((nowMs() - t) / 1000).toFixed(1)} s`);
      const d = await drain(sys, cfg.spikeDue, 1, 10, cfg.spikeCapMs);
      record(sys.db, sys.id, finished === 0 ? M.spikeEmpty : M.spikeFull, 'jobs/s', d.rate, d.note ? `drain stopped after ${cfg.spikeCapMs / 1000} s (rate over the jobs done by then)` : undefined);
    });
  }
}

async function main(): Promise<void> {
  const started = new Date();
  const t0 = nowMs();
  log(`leasehold bench: --db ${dbArg}${quick ? ' --quick' : ''}; ${cfg.jobs} jobs, ${cfg.repeats} repeat(s), ${os.cpus().length} CPUs, load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  const selected = allSystems.filter((s) => dbs.includes(s.db) && (!only || only.includes(s.id) || s.kind === 'leasehold'));
  let cleaned = false;
  const cleanupAll = async () => {
    if (cleaned) return;
    cleaned = true;
    for (const s of selected) await s.cleanup().catch((e: unknown) => log(`cleanup ${s.id}: ${(e as Error).message}`));
    rmSync(process.env.BENCH_SQLITE_DIR as string, { recursive: true, force: true });
  };
  process.once('SIGINT', () => void cleanupAll().then(() => process.exit(130)));
  const out: string[] = [];
  try {
    for (const db of dbs) {
      const systems = selected.filter((s) => s.db === db);
      for (let r = 1; r <= cfg.repeats; r++) {
        // rotate the order between rounds so no system always runs first or last
        const k = (r - 1) % systems.length;
        for (const sys of [...systems.slice(k), ...systems.slice(0, k)]) await round(sys, r);
      }
      if (cfg.spike) for (const sys of systems.filter((s) => s.id === `leasehold-${db}`)) await spike(sys);
      const t = `\n### ${db} (${cfg.jobs.toLocaleString('en-US')} no-op jobs; median (min–max) of ${cfg.repeats} run${cfg.repeats > 1 ? 's' : ''})\n\n${table(db, { only, spikeDue: cfg.spikeDue, spikeFinished: cfg.spikeFinished })}\n`;
      out.push(t);
      process.stdout.write(t);
    }
  } finally {
    await cleanupAll();
  }
  const summary = summarize();
  const targets = `\n### the issue's targets (leasehold ÷ reference, medians of this run)\n\n${targetsTable(summary)}\n`;
  out.push(targets);
  process.stdout.write(targets);
  const file = writeResultsFile({ args, started, t0, quick, config: cfg, selected, summary, tables: out });
  log(`done in ${Math.round((nowMs() - t0) / 1000)} s; raw results: ${file}`);
}

await main();
process.exit(0);