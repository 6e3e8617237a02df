/**
 * The chaos events, each aimed by looking at the database rather than at a clock: a SIGKILL
 * or a SIGSTOP goes to a worker that holds leases right now (running jobs' locked_by), a
 * zombie stays stopped until every job it held was rescued by another worker, a connection
 * kill waits until there are worker connections to kill. Each resolves once it took effect
 * and records when.
 */
import type { JobRow } from '../../src/core/index.js';
import { pause, waitUntil } from '../process/support-checks.js';
import type { ChaosDb } from './db.js';
import type { ChaosWorker, WorkerPool } from './pool.js';

export type EventKind = 'kill' | 'zombie' | 'connkill' | 'restart';

/** What happened, and when it took effect (Date.now() of the runner, the machine's clock). */
export type ChaosEvent =
  | { kind: 'kill'; pid: number; workerId: string; at: number; leases: number }
  /** stopped (`at`) until every job it held was rescued; `stops` lists each stopped period */
  | { kind: 'zombie'; pid: number; workerId: string; at: number; contAt: number; leases: number; stops: { at: number; contAt: number }[] }
  | { kind: 'connkill'; at: number; connections: number }
  | { kind: 'restart'; at: number; upAt: number };

export interface EventContext {
  db: ChaosDb;
  pool: WorkerPool;
  leaseMs: number;
  /** highest tranche whose anchors were released */
  released: () => number;
  log: (msg: string) => void;
}

/** Retry `f` through a dropped connection or a restarting server, for at most `timeoutMs`. */
export async function retrying<T>(what: string, f: () => Promise<T>, timeoutMs = 60_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await f();
    } catch (e) {
      if (Date.now() > until) throw new Error(`${what} kept failing for ${timeoutMs} ms: ${(e as Error).message}`);
      await pause(100);
    }
  }
}

export function runningJobs(db: ChaosDb): Promise<JobRow[]> {
  return retrying('list running jobs', () => db.storage.jobs.list({ status: 'running', limit: 100_000 }));
}

/** A usable worker holding leases, preferring the one running the most jobs that are not held anchors (mid-effect). */
async function pickHolder(ctx: EventContext): Promise<ChaosWorker> {
  return waitUntil(
    'a running worker holds a lease',
    async () => {
      const score = new Map<ChaosWorker, number>();
      for (const job of await runningJobs(ctx.db)) {
        const w = ctx.pool.byWorkerId(job.lockedBy);
        if (!w?.usable) continue;
        const anchor = (job.payload as { anchor?: number }).anchor;
        const active = anchor === undefined || anchor <= ctx.released() ? 1_000 : 1;
        score.set(w, (score.get(w) ?? 0) + active);
      }
      return [...score].sort((a, b) => b[1] - a[1])[0]?.[0];
    },
    60_000,
    10,
  );
}

async function leasesOf(ctx: EventContext, w: ChaosWorker): Promise<string[]> {
  return (await runningJobs(ctx.db)).filter((j) => j.lockedBy === w.workerId).map((j) => j.id);
}

/** SIGKILL a lease holder (again if it had let go of every lease by the time it died); a replacement starts. */
async function kill(ctx: EventContext, out: ChaosEvent[]): Promise<void> {
  for (;;) {
    const w = await pickHolder(ctx);
    const at = await ctx.pool.kill(w);
    // nobody can have rescued its jobs yet: their leases run for a while after its last heartbeat
    const leases = (await leasesOf(ctx, w)).length;
    out.push({ kind: 'kill', pid: w.pid, workerId: w.workerId, at, leases });
    ctx.log(`SIGKILL pid ${w.pid} holding ${leases} lease(s)`);
    await ctx.pool.spawn();
    if (leases > 0) return;
  }
}

/**
 * SIGSTOP `w` at a moment none of its connections is inside a transaction: stopped inside one it
 * would hold the locks (SQLite: the file's write lock; the servers: its rows) that the rescue
 * of its own jobs needs, and nothing would be rescued until it resumed.
 */
async function freeze(ctx: EventContext, w: ChaosWorker): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const at = await ctx.pool.freeze(w);
    // a statement it sent before the stop still completes; only an open transaction stays
    for (let look = 0; look < 10; look++) {
      if (await retrying('look at the stopped worker\'s connections', () => ctx.db.outsideTransactions(w.tag))) return at;
      await pause(20);
    }
    ctx.pool.thaw(w);
    await pause(10 + i * 5);
  }
  throw new Error(`could not stop pid ${w.pid} outside a transaction`);
}

/**
 * SIGSTOP a lease holder until every job it held was rescued, then SIGCONT it: a zombie. Found
 * inside a transaction while stopped (its last statement had not reached the server when it was
 * checked), it would block the rescue of the rows it locked: it is let run until it is outside
 * one, and stopped again.
 */
async function zombie(ctx: EventContext, out: ChaosEvent[]): Promise<void> {
  for (;;) {
    const w = await pickHolder(ctx);
    let at = await freeze(ctx, w);
    const held = await leasesOf(ctx, w);
    if (held.length === 0) {
      ctx.pool.thaw(w);
      continue;
    }
    const stops: { at: number; contAt: number }[] = [];
    const until = Date.now() + ctx.leaseMs * 10 + 60_000;
    try {
      while ((await leasesOf(ctx, w)).length > 0) {
        if (Date.now() > until) throw new Error(`the ${held.length} job(s) stopped pid ${w.pid} held were not all rescued in ${ctx.leaseMs * 10 + 60_000} ms`);
        if (Date.now() - at > ctx.leaseMs && !(await retrying('look at the stopped worker', () => ctx.db.outsideTransactions(w.tag)))) {
          stops.push({ at, contAt: ctx.pool.thaw(w) });
          ctx.log(`stopped pid ${w.pid} was inside a transaction; let it out and stopped it again`);
          at = await freeze(ctx, w);
        }
        await pause(50);
      }
    } catch (e) {
      ctx.pool.thaw(w);
      throw e;
    }
    const contAt = ctx.pool.thaw(w);
    stops.push({ at, contAt });
    out.push({ kind: 'zombie', pid: w.pid, workerId: w.workerId, at: stops[0]!.at, contAt, leases: held.length, stops });
    ctx.log(`SIGSTOP pid ${w.pid} holding ${held.length} lease(s); SIGCONT after ${contAt - stops[0]!.at} ms, once all were rescued`);
    return;
  }
}

async function connectionKill(ctx: EventContext, out: ChaosEvent[]): Promise<void> {
  const connections = await waitUntil('worker connections to kill', () => retrying('kill connections', () => ctx.db.killConnections()), 60_000, 50);
  out.push({ kind: 'connkill', at: Date.now(), connections });
  ctx.log(`killed ${connections} worker connection(s)`);
}

async function restart(ctx: EventContext, out: ChaosEvent[]): Promise<void> {
  const server = ctx.db.server;
  if (!server) throw new Error('restart: no server to restart');
  const at = Date.now();
  await server.restart();
  const upAt = Date.now();
  out.push({ kind: 'restart', at, upAt });
  ctx.log(`restarted the ${server.kind} server (down ${upAt - at} ms)`);
}

export function runEvent(kind: EventKind, ctx: EventContext, out: ChaosEvent[]): Promise<void> {
  switch (kind) {
    case 'kill':
      return kill(ctx, out);
    case 'zombie':
      return zombie(ctx, out);
    case 'connkill':
      return connectionKill(ctx, out);
    case 'restart':
      return restart(ctx, out);
  }
}

/** The events spread evenly over the run: each kind at its own even spacing, merged. */
export function planEvents(counts: Record<EventKind, number>): EventKind[] {
  const slots = (Object.entries(counts) as [EventKind, number][]).flatMap(([kind, n]) => Array.from({ length: n }, (_, i) => ({ kind, pos: (i + 0.5) / n })));
  return slots.sort((a, b) => a.pos - b.pos).map((s) => s.kind);
}
