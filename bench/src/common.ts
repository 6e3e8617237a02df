/**
 * Shared bits of the benchmark harness: connection URLs, timing, statistics.
 * Every system (leasehold, its peers, the raw SQL loops) implements `SystemDef` in systems/.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** server URL without a database: the harness creates and drops its own databases */
export const MYSQL_URL = process.env.BENCH_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306';
export const REDIS = { host: process.env.BENCH_REDIS_HOST ?? '127.0.0.1', port: Number(process.env.BENCH_REDIS_PORT ?? 6379) };

/** where SQLite files live during a run (set by the coordinator, inherited by workers) */
export function sqliteDir(): string {
  let dir = process.env.BENCH_SQLITE_DIR;
  if (!dir) {
    // not inherited from a coordinator (a tool run on its own): this process owns and removes it
    const own = join(tmpdir(), `leasehold-bench-${process.pid}`);
    process.on('exit', () => rmSync(own, { recursive: true, force: true }));
    dir = process.env.BENCH_SQLITE_DIR = own;
  }
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * Before each PostgreSQL measurement: a checkpoint, so that every system starts its enqueue and
 * drain on the same footing. PostgreSQL checkpoints whenever max_wal_size (1 GB here) of WAL has
 * been written, which in a run happens every 20 s to 2 min; while one runs, the first change to
 * every page writes the whole page to the WAL. Whichever system a checkpoint happened to overlap
 * lost up to a third of its rate (one full run: leasehold's c=10 drain 27,000 jobs/s in the
 * round that started on a quiet WAL, 18,300 and 19,000 in the two that overlapped checkpoints).
 */
export async function checkpointPostgres(): Promise<void> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    await c.query('CHECKPOINT');
  } finally {
    await c.end();
  }
}

/** wall-clock ms with sub-ms precision, comparable across processes on one machine */
export const nowMs = (): number => performance.timeOrigin + performance.now();
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export type Db = 'postgres' | 'sqlite' | 'mysql';
export type OnJob = (payload: unknown) => void;

export interface Producer {
  enqueueOne(payload: object): Promise<void>;
  /** one call of the system's bulk API */
  enqueueBulk(payloads: object[]): Promise<void>;
  /** jobs not finished yet (queued, running, retrying) per the system's own tables */
  remaining(): Promise<number>;
  close(): Promise<void>;
}

export interface RunningWorker {
  stop(): Promise<void>;
}

export interface SystemDef {
  /** unique id, used by worker processes to find the definition again */
  id: string;
  /** grouping for the table ("--db") */
  db: Db;
  /** short label: "graphile-worker 0.18.0, localQueue" */
  label: string;
  /** the settings, spelled out for docs/performance.md */
  settings: string;
  kind: 'leasehold' | 'peer' | 'raw';
  /** enqueue timings are measured (variants that share a peer's enqueue path skip them) */
  timeEnqueue: boolean;
  /** takes part in the latency workload */
  latency: boolean;
  /** reference loops with one row per statement: only the c=10 drain (they are slow and scale no better) */
  onlyC10?: boolean;
  /** latency in every round (leasehold on PostgreSQL and graphile-worker, the pair the latency
   * target names); others: first round only */
  latencyEveryRound?: boolean;
  /** a variant that differs only in its poll interval: runs the latency workload only */
  latencyOnly?: boolean;
  /** peers that no target refers to run their throughput workloads in the first round only */
  contextOnly?: boolean;
  /** drains are stopped after this many ms (systems bound by their poll interval) */
  drainCapMs?: number;
  /** drop and recreate this system's tables (coordinator) */
  reset(): Promise<void>;
  /** remove everything the system created (end of run) */
  cleanup(): Promise<void>;
  producer(): Promise<Producer>;
  /** start consuming in this process; onJob is called once per job run */
  worker(opts: { concurrency: number; onJob: OnJob }): Promise<RunningWorker>;
  /** spike workload: fill the (fresh) tables with `finished` finished rows and `due` due rows */
  seedSpike?(finished: number, due: number): Promise<void>;
}

export function stats(values: number[]): { median: number; min: number; max: number; n: number } {
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  if (n === 0) return { median: NaN, min: NaN, max: NaN, n: 0 };
  const median = n % 2 ? (s[(n - 1) / 2] as number) : ((s[n / 2 - 1] as number) + (s[n / 2] as number)) / 2;
  return { median, min: s[0] as number, max: s[n - 1] as number, n };
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}

export function fmt(v: number): string {
  if (!Number.isFinite(v)) return '-';
  if (Math.abs(v) >= 100) return Math.round(v).toLocaleString('en-US');
  if (Math.abs(v) >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

export function chunks<T>(xs: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += size) out.push(xs.slice(i, i + size));
  return out;
}
