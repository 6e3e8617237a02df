/**
 * Idle wake-ups (issue #26): enqueue→start latency of an idle worker at default settings, the
 * job enqueued from ANOTHER process, and the statements that idle worker sends per second.
 *
 *   BENCH_LEASEHOLD_SRC=$PWD/../src/index.ts node --import tsx src/tools/idle-wakeups.ts --db sqlite|mysql [--jobs 100] [--idle-s 10] [--neighbour-ms 10]
 *
 * A forked worker process (c=10, every default: sweeper, heartbeats, 1 s poll) runs a no-op whose
 * payload carries the enqueue time; this process enqueues one job at a time, waiting for it to
 * start, then a random 0.3–1.3 s (so enqueues land at every phase of the 1 s poll). Statements are
 * counted in the worker process, client side: SQLite's executed statements (BEGIN/COMMIT not
 * counted), and on MySQL/MariaDB every statement sent (a multi-statement query counts each).
 * `--neighbour-ms N`: a second window in which this process enqueues, every N ms, jobs of a
 * type the worker does not run, counting what those wake-ups cost the idle worker.
 * `BENCH_IDLE_DETAIL=1` (MySQL/MariaDB) also prints the idle window's statements per second by
 * their header.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const src = process.env.BENCH_LEASEHOLD_SRC || '../../../dist/index.js';
const lh = (await import(src)) as typeof import('../../../src/index.ts');
const MYSQL = process.env.BENCH_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306';
const now = (): number => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const args = process.argv.slice(2);
const opt = (name: string, dflt: string): string => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1]! : dflt;
};

interface Counted { statements: number; trips: number; byHeader: Map<string, number> }

/** Count the statements a storage sends (reaching into the adapter's handle: a measurement, not an API). */
function countStatements(storage: object, db: string): Counted {
  const c: Counted = { statements: 0, trips: 0, byHeader: new Map() };
  const h = (storage as { db: Record<string, unknown> }).db;
  if (db === 'sqlite') {
    const stmt = (h.stmt as (t: string, m?: string) => Record<string, unknown>).bind(h);
    const seen = new WeakSet<object>();
    h.stmt = (t: string, m?: string) => {
      const s = stmt(t, m);
      if (!seen.has(s)) {
        seen.add(s);
        for (const k of ['run', 'all', 'get', 'iterate']) {
          const f = s[k] as ((...a: unknown[]) => unknown) | undefined;
          if (f) s[k] = (...a: unknown[]) => (c.statements++, f.apply(s, a));
        }
      }
      return s;
    };
  } else {
    const pool = h.pool as { query: (...a: unknown[]) => unknown; getConnection: () => Promise<{ query: (...a: unknown[]) => unknown }> };
    const n = (o: unknown): number => {
      const heads = String((o as { sql?: string }).sql ?? o).match(/-- leasehold [A-Za-z.]+/g) ?? ['(no header)'];
      for (const x of heads) c.byHeader.set(x, (c.byHeader.get(x) ?? 0) + 1);
      c.trips++;
      return heads.length;
    };
    const q = pool.query.bind(pool);
    pool.query = (o: unknown, ...rest: unknown[]) => ((c.statements += n(o)), q(o, ...rest));
    const get = pool.getConnection.bind(pool);
    pool.getConnection = async () => {
      const conn = await get();
      if (!(conn as { counted?: boolean }).counted) {
        const cq = conn.query.bind(conn);
        conn.query = (o: unknown, ...rest: unknown[]) => ((c.statements += n(o)), cq(o, ...rest));
        (conn as { counted?: boolean }).counted = true;
      }
      return conn;
    };
  }
  return c;
}

async function child(url: string, db: string): Promise<void> {
  process.env.LEASEHOLD_LOG_LEVEL ??= 'silent';
  const storage = await lh.openStorage(url);
  const counted = countStatements(storage, db);
  const noop = lh.defineJob({ type: 'noop', handler: (p: { t: number }) => void process.send!({ lat: now() - p.t }) });
  const w = new lh.Worker({ storage, jobs: [noop], concurrency: 10 });
  await w.start();
  process.on('message', async (m: { count?: boolean; stop?: boolean }) => {
    if (m.count) process.send!({ statements: counted.statements, trips: counted.trips, byHeader: [...counted.byHeader] });
    if (m.stop) {
      await w.stop({ deadlineMs: 2_000 });
      await storage.close();
      process.exit(0);
    }
  });
  process.send!({ ready: true });
}

async function parent(): Promise<void> {
  const db = opt('db', 'sqlite');
  const jobs = Number(opt('jobs', '100'));
  const idleS = Number(opt('idle-s', '10'));
  const neighbourMs = Number(opt('neighbour-ms', '0'));
  let url: string;
  let dir = '';
  if (db === 'sqlite') {
    dir = mkdtempSync(join(os.tmpdir(), 'lh-idle-'));
    url = `sqlite:${join(dir, "idle.db")}`;
  } else {
    const mysql = (await import('mysql2/promise')).default;
    const c = await mysql.createConnection(MYSQL);
    await c.query('DROP DATABASE IF EXISTS leasehold_bench_idle');
    await c.query('CREATE DATABASE leasehold_bench_idle');
    await c.end();
    url = `${MYSQL}/leasehold_bench_idle`;
  }
  const storage = await lh.openStorage(url);
  await storage.migrate();
  const noop = lh.defineJob({ type: 'noop', handler: () => {} });
  const client = lh.createClient({ storage, jobs: [noop] });
  const cp = fork(fileURLToPath(import.meta.url), ['--child', url, db], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const inbox: Record<string, unknown>[] = [];
  cp.on('message', (m: Record<string, unknown>) => inbox.push(m));
  const next = async (key: string, ms: number): Promise<Record<string, unknown> | null> => {
    const until = now() + ms;
    for (;;) {
      const i = inbox.findIndex((m) => key in m);
      if (i >= 0) return inbox.splice(i, 1)[0]!;
      if (now() > until) return null;
      await sleep(1);
    }
  };
  if (!(await next('ready', 30_000))) throw new Error('worker never ready');
  await sleep(2_000);
  cp.send({ count: true });
  const c0 = (await next('statements', 5_000))!;
  await sleep(idleS * 1_000);
  cp.send({ count: true });
  const c1 = (await next('statements', 5_000))!;
  const rate = (k: string, a = c0, b = c1) => (((b[k] as number) - (a[k] as number)) / idleS).toFixed(2);
  // a busy neighbour: another process enqueues jobs this worker does not run, every `neighbourMs`
  let busy = '';
  if (neighbourMs > 0) {
    const other = lh.defineJob({ type: 'elsewhere', handler: () => {} });
    const otherClient = lh.createClient({ storage, jobs: [other] });
    const until = now() + idleS * 1_000;
    let n = 0;
    for (let next = now(); now() < until; next += neighbourMs, n++) {
      await otherClient.enqueue('elsewhere', {});
      const wait = next + neighbourMs - now();
      if (wait > 0) await sleep(wait);
    }
    cp.send({ count: true });
    const c2 = (await next('statements', 5_000))!;
    busy = `; while another process enqueued ${(n / idleS).toFixed(0)} jobs/s of a type it does not run: ${rate('statements', c1, c2)} statements/s`;
  }
  if (process.env.BENCH_IDLE_DETAIL) {
    // statements per header over the idle window, per second
    const before = new Map(c0.byHeader as [string, number][]);
    console.log((c1.byHeader as [string, number][]).map(([h, n]) => `${h.slice(13)} ${((n - (before.get(h) ?? 0)) / idleS).toFixed(2)}`).filter((l) => !l.endsWith(' 0.00')).join(', '));
  }
  const lats: number[] = [];
  let lost = 0;
  const enqueueMs: number[] = [];
  for (let i = 0; i < jobs; i++) {
    const t = now();
    await client.enqueue('noop', { t });
    enqueueMs.push(now() - t);
    const m = await next('lat', 5_000);
    if (m) lats.push(m.lat as number);
    else lost++;
    // a random phase against the worker's 1 s poll
    await sleep(300 + Math.random() * 1_000);
  }
  cp.send({ stop: true });
  await new Promise((r) => cp.on('exit', r));
  await storage.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  lats.sort((a, b) => a - b);
  enqueueMs.sort((a, b) => a - b);
  const pct = (p: number, xs = lats) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!.toFixed(1);
  console.log(`${db}: idle worker ${rate('statements')} statements/s${db === 'sqlite' ? '' : ` in ${rate('trips')} round trips/s`} over ${idleS} s${busy}; enqueue→start over ${lats.length} jobs (${lost} not started within 5 s): p50 ${pct(50)} ms, p95 ${pct(95)}, p99 ${pct(99)}, max ${lats.at(-1)!.toFixed(1)}; the enqueue call itself: p50 ${pct(50, enqueueMs)} ms, p99 ${pct(99, enqueueMs)}`);
}

if (args[0] === '--child') await child(args[1]!, args[2]!);
else await parent();
