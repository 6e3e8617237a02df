/**
 * One chaos run on one database: start the workers, then work through the event plan. Before
 * each event the runner enqueues the next tranche of jobs and waits until a tenth of it has
 * succeeded, so every event lands mid-drain. Each tranche starts with two anchor jobs that hold
 * their leases until the next tranche (the gate in handlers.ts): whatever the machine's speed,
 * there is a lease holder to aim at, and never enough held slots to stall the rest. After the
 * last event the last tranche goes in and the run waits until every job is finished, or until
 * nothing has moved for a long while (the audit then reports what is stuck).
 */
import { mkdirSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AttemptRow, JobRow } from '../../src/core/index.js';
import type { EffectRow } from '../../src/core/storage.js';
import { createClient } from '../../src/runtime/client.js';
import { pause, waitUntil } from '../process/support-checks.js';
import type { ChaosDb } from './db.js';
import { workerTag } from './db.js';
import type { ChaosEvent, EventKind } from './events.js';
import { planEvents, retrying, runEvent } from './events.js';
import type { LedgerEntry } from './handlers.js';
import { jobs as chaosJobs } from './handlers.js';
import { WorkerPool } from './pool.js';

export interface ChaosSettings {
  jobs: number;
  workers: number;
  concurrency: number;
  leaseMs: number;
  events: Record<EventKind, number>;
  /** how long the final drain may go without a job finishing before the rest counts as stuck */
  stallMs: number;
  log: (msg: string) => void;
}

export interface ChaosOutcome {
  /** job ids in enqueue (sequence) order */
  ids: string[];
  events: ChaosEvent[];
  /** why the plan was cut short (null: every event happened) */
  aborted: string | null;
  /** workers that exited mid-run without being signalled */
  crashes: { pid: number; exit: string; tail: string }[];
  /** how each worker ended when told to stop */
  exits: { pid: number; code: number | null; signal: string | null }[];
  pidOfWorker: Map<string, number>;
  jobs: JobRow[];
  attempts: AttemptRow[];
  effects: EffectRow[];
  ledger: LedgerEntry[];
  /** ledger lines cut short (a process killed mid-append) */
  tornLines: number;
}

const ENQUEUE_BATCH = 1_000;
/** anchor jobs per tranche: few, so they never hold enough slots to stall the other jobs */
const ANCHORS = 2;

async function succeeded(db: ChaosDb): Promise<{ succeeded: number; finished: number }> {
  const counts = await retrying('count jobs', () => db.storage.queues.counts());
  let ok = 0;
  let finished = 0;
  for (const c of counts) {
    if (c.status === 'succeeded') ok += c.count;
    if (c.status === 'succeeded' || c.status === 'dead' || c.status === 'cancelled') finished += c.count;
  }
  return { succeeded: ok, finished };
}

function readLedger(dir: string): { entries: LedgerEntry[]; torn: number } {
  const entries: LedgerEntry[] = [];
  let torn = 0;
  for (const f of readdirSync(dir)) {
    const lines = readFileSync(path.join(dir, f), 'utf8').split('\n');
    // the text after the last newline is a line whose write was cut short, or nothing
    if (lines.pop()) torn++;
    for (const l of lines) entries.push(JSON.parse(l) as LedgerEntry);
  }
  return { entries, torn };
}

export async function runChaos(db: ChaosDb, dir: string, s: ChaosSettings): Promise<ChaosOutcome> {
  const gate = path.join(dir, 'gate');
  const ledgerDir = path.join(dir, 'ledger');
  mkdirSync(ledgerDir, { recursive: true });
  let released = 0;
  const release = (tranche: number) => {
    released = tranche;
    // replaced by rename, so a reader never sees a half-written number
    writeFileSync(`${gate}.tmp`, String(released));
    renameSync(`${gate}.tmp`, gate);
  };
  release(0);

  // one tranche enqueued before each event, the last one after them
  const plan = planEvents(s.events);
  const tranches = plan.length + 1;
  if (s.jobs < tranches * (ANCHORS + 4)) throw new Error(`--jobs must be at least ${tranches * (ANCHORS + 4)} for ${plan.length} events`);
  const client = createClient({ storage: db.storage, jobs: chaosJobs });
  const ids: string[] = [];
  let enqueued = 0;
  /** Enqueue the next tranche; resolves to how many of its jobs are not anchors. */
  const enqueueTranche = async (): Promise<number> => {
    const t = ++enqueued;
    const [from, to] = [Math.floor(((t - 1) * s.jobs) / tranches), Math.floor((t * s.jobs) / tranches)];
    const anchors = t < tranches ? ANCHORS : 0;
    for (let at = from; at < to; at += ENQUEUE_BATCH) {
      const seqs = Array.from({ length: Math.min(ENQUEUE_BATCH, to - at) }, (_, k) => at + k + 1);
      // anchors go first (priority -1), so they are held from the start of their tranche; the
      // idempotency key makes a retry after a dropped connection safe
      const items = seqs.map((seq) => ({
        type: 'chaos',
        payload: seq - from <= anchors ? { seq, anchor: t } : { seq },
        options: { idempotencyKey: `chaos:${seq}`, priority: seq - from <= anchors ? -1 : 0 },
      }));
      const batch = await retrying('enqueue', () => client.enqueueMany(items));
      ids.push(...batch.map((j) => j.id));
    }
    return to - from - anchors;
  };

  const pool = new WorkerPool({ url: db.workerUrl, tag: workerTag, concurrency: s.concurrency, leaseMs: s.leaseMs, env: { CHAOS_GATE: gate, CHAOS_LEDGER_DIR: ledgerDir } });
  const events: ChaosEvent[] = [];
  const crashes: ChaosOutcome['crashes'] = [];
  const seenCrashes = new Set<number>();
  const noteCrashes = () => {
    for (const w of pool.crashed().filter((c) => !seenCrashes.has(c.pid))) {
      seenCrashes.add(w.pid);
      crashes.push({ pid: w.pid, exit: JSON.stringify(w.proc.exit), tail: w.proc.tail(10) });
      s.log(`pid ${w.pid} exited on its own (${JSON.stringify(w.proc.exit)})`);
    }
  };
  let aborted: string | null = null;
  let exits: ChaosOutcome['exits'] = [];
  try {
    await Promise.all(Array.from({ length: s.workers }, () => pool.spawn()));
    s.log(`${s.workers} workers started`);

    const ctx = { db, pool, leaseMs: s.leaseMs, released: () => released, log: s.log };
    try {
      for (const [i, kind] of plan.entries()) {
        // a worker that died on its own is reported and replaced
        const lost = crashes.length;
        noteCrashes();
        for (let k = lost; k < crashes.length; k++) await pool.spawn();
        // the previous tranche's anchors may finish now; this tranche's hold their leases until the next
        release(i);
        const before = (await succeeded(db)).succeeded;
        const target = before + Math.ceil((await enqueueTranche()) / 10);
        await waitUntil(`a tenth of tranche ${i + 1} has succeeded (${target})`, async () => (await succeeded(db)).succeeded >= target, 120_000, 25);
        s.log(`event ${i + 1}/${plan.length} (${kind}), ${ids.length} jobs enqueued:`);
        await runEvent(kind, ctx, events);
      }
    } catch (e) {
      aborted = (e as Error).message;
      s.log(`plan cut short: ${aborted}`);
    }

    release(tranches);
    while (enqueued < tranches) await enqueueTranche();
    let last = -1;
    let movedAt = Date.now();
    for (;;) {
      const { finished } = await succeeded(db);
      if (finished >= s.jobs) break;
      if (finished !== last) [last, movedAt] = [finished, Date.now()];
      if (Date.now() - movedAt > s.stallMs) {
        s.log(`no job finished for ${s.stallMs} ms; ${s.jobs - finished} not finished`);
        break;
      }
      await pause(100);
    }
    noteCrashes();
  } finally {
    exits = await pool.stopAll();
  }

  const jobs = await retrying('list jobs', () => db.storage.jobs.list({ limit: s.jobs + 1_000 }));
  const attempts = await retrying('read attempts', () => db.allAttempts());
  const effects = await retrying('list effects', () => db.storage.effects.list({ limit: s.jobs + 1_000 }));
  const { entries, torn } = readLedger(ledgerDir);
  return {
    ids,
    events,
    aborted,
    crashes,
    exits,
    pidOfWorker: new Map(pool.all.map((w) => [w.workerId, w.pid])),
    jobs,
    attempts,
    effects,
    ledger: entries,
    tornLines: torn,
  };
}
