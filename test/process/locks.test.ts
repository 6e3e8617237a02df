/**
 * Distributed locks across real processes (test/process/fixtures/lock-child.ts, public API):
 *
 * - four processes contend for ONE lock; every holder records its interval; no two intervals
 *   overlap, fences grow in acquisition order, and the lock changed hands many times. The issue
 *   asks for a minute of contention; 10 s (several hundred handovers) keeps CI time sane.
 * - a SIGSTOPped holder loses the lock at its TTL (not before), another process acquires it,
 *   and after SIGCONT the old holder's extend and release are rejected.
 * - a semaphore of 3 under four processes never has 4 holders (and does reach 3).
 *
 * Each scenario runs on SQLite (one file), PostgreSQL and MariaDB/MySQL; the database kinds run
 * concurrently, and the contention rounds reuse one set of processes per database, to keep the
 * wall time down. Every wait is bounded.
 */
import assert from 'node:assert/strict';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createLocks } from '../../src/index.js';
import type { LockDb, LockDbKind } from './lock-dbs.js';
import { lockDb } from './lock-dbs.js';

const CHILD = fileURLToPath(new URL('./fixtures/lock-child.ts', import.meta.url));
const KINDS: readonly LockDbKind[] = ['sqlite', 'postgres', 'mysql'];
const CONTEND_MS = 10_000;

interface Msg {
  ev: string;
  [k: string]: unknown;
}

const live = new Set<Child>();
after(() => {
  for (const c of live) c.proc.kill('SIGKILL');
});

/** A lock child with its stdout parsed into messages; waits are bounded. */
class Child {
  readonly proc: ChildProcessWithoutNullStreams;
  readonly msgs: Msg[] = [];
  readonly exited: Promise<number | null>;
  stderr = '';
  #partial = '';
  #waiters = new Set<() => void>();

  constructor(args: string[]) {
    this.proc = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    live.add(this);
    this.proc.stdout.setEncoding('utf8').on('data', (d: string) => {
      const lines = (this.#partial + d).split('\n');
      this.#partial = lines.pop() ?? '';
      for (const l of lines) if (l.startsWith('{')) this.msgs.push(JSON.parse(l) as Msg);
      for (const w of this.#waiters) w();
    });
    this.proc.stderr.setEncoding('utf8').on('data', (d: string) => (this.stderr += d));
    this.exited = new Promise((r) =>
      this.proc.once('close', (code) => {
        live.delete(this);
        for (const w of this.#waiters) w();
        r(code);
      }),
    );
  }

  /** The first message (after index `from`) matching; fails after `ms` with what was seen. */
  wait(pred: (m: Msg) => boolean, ms: number, from = 0): Promise<Msg> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const m = this.msgs.slice(from).find(pred);
        if (m) done(() => resolve(m));
        else if (this.proc.exitCode !== null || this.proc.signalCode !== null) done(() => reject(new Error(`child exited (${this.proc.exitCode ?? this.proc.signalCode}) before the message; seen ${JSON.stringify(this.msgs)}; stderr ${this.stderr}`)));
      };
      const timer = setTimeout(() => done(() => reject(new Error(`no such message within ${ms} ms; seen ${JSON.stringify(this.msgs)}; stderr ${this.stderr}`))), ms);
      const done = (f: () => void) => {
        clearTimeout(timer);
        this.#waiters.delete(check);
        f();
      };
      this.#waiters.add(check);
      check();
    });
  }

  async exit(ms: number): Promise<number | null> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`child did not exit within ${ms} ms; stderr ${this.stderr}`)), ms)));
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

type Interval = [acquiredAt: number, releasedAt: number, releaseOk: boolean, fence: number, pid: number];

/** Contender processes on one database, spawned once and reused for several rounds. */
class Contenders {
  readonly kids: Child[];
  constructor(readonly url: string, readonly dir: string, n: number) {
    this.kids = Array.from({ length: n }, () => new Child(['contend', url, dir]));
  }

  ready(): Promise<unknown> {
    return Promise.all(this.kids.map((k) => k.wait((m) => m.ev === 'ready', 40_000)));
  }

  /** The first `n` contenders go for `name` (a semaphore when slots > 1) for `ms`; every recorded holding. */
  async round(name: string, slots: number, n: number, ms: number): Promise<Interval[]> {
    const kids = this.kids.slice(0, n);
    const until = Date.now() + ms;
    for (const k of kids) k.proc.stdin.write(`go ${name} ${slots} ${until}\n`);
    const done = await Promise.all(kids.map((k) => k.wait((m) => m.ev === 'done' && m.name === name, ms + 30_000)));
    for (const d of done) assert.ok((d.held as number) > 0, `every contender held ${name} at least once`);
    return readFileSync(path.join(this.dir, `${name}.jsonl`), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Interval);
  }

  async close(): Promise<void> {
    for (const k of this.kids) k.proc.stdin.end();
    assert.deepEqual(await Promise.all(this.kids.map((k) => k.exit(10_000))), this.kids.map(() => 0), 'every contender exits 0');
  }
}

/** Most holders at any instant (a release at t counts before an acquire at t). */
function maxOverlap(intervals: Interval[]): number {
  const events = intervals.flatMap(([a, r]) => [[a, 1], [r, -1]] as const).sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let cur = 0;
  let max = 0;
  for (const [, d] of events) max = Math.max(max, (cur += d));
  return max;
}

describe('process locks: contention across processes', { concurrency: true }, () => {
  for (const kind of KINDS) {
    describe(kind, { concurrency: 1 }, () => {
      let db: LockDb | null = null;
      let procs: Contenders;
      before(async () => {
        db = await lockDb(kind, 'process locks: contention');
        if (!db) return;
        procs = new Contenders(db.url, db.dir, 4);
        await procs.ready();
      });
      after(async () => {
        try {
          if (db) await procs.close();
        } finally {
          await db?.drop();
        }
      });

      it(`four processes, one lock, ${CONTEND_MS / 1000} s: no two holdings overlap; fences grow in order; many handovers`, { timeout: 90_000 }, async (t) => {
        if (!db) return t.skip(`${kind} unreachable`);
        const iv = (await procs.round('the-mutex', 1, 4, CONTEND_MS)).sort((a, b) => a[0] - b[0]);
        assert.ok(iv.length >= 20, `many holdings, got ${iv.length}`);
        assert.ok(iv.every((i) => i[2] === true), 'every release was accepted: no holding lapsed or was taken over');
        for (let i = 1; i < iv.length; i++) {
          const [prev, cur] = [iv[i - 1]!, iv[i]!];
          assert.ok(cur[0] >= prev[1], `holding ${JSON.stringify(cur)} began before ${JSON.stringify(prev)} ended`);
          assert.ok(cur[3] > prev[3], `fences grow in acquisition order: ${prev[3]} then ${cur[3]}`);
        }
        const handovers = iv.filter((x, i) => i > 0 && x[4] !== iv[i - 1]![4]).length;
        assert.ok(handovers >= 10, `the lock changed hands many times, got ${handovers}`);
        assert.equal(new Set(iv.map((x) => x[4])).size, 4, 'all four processes held it');
      });

      it('the same four processes, a semaphore of 3: never 4 holders at once, and 3 at once happens', { timeout: 60_000 }, async (t) => {
        if (!db) return t.skip(`${kind} unreachable`);
        const iv = await procs.round('the-pool', 3, 4, 4_000);
        assert.ok(iv.length >= 20, `many holdings, got ${iv.length}`);
        assert.ok(iv.every((i) => i[2] === true), 'every release was accepted');
        assert.equal(maxOverlap(iv), 3, 'at most 3 holders at any instant (and the pool was used to the full)');
        assert.equal(new Set(iv.map((x) => x[3])).size, iv.length, 'every holding had its own fence');
      });
    });
  }
});

describe('process locks: a SIGSTOPped holder loses the lock at its TTL', { concurrency: true }, () => {
  for (const kind of KINDS) {
    it(`${kind}: another process acquires it after the TTL; the old holder's extend and release are rejected`, { timeout: 60_000 }, async (t) => {
      const db = await lockDb(kind, 'process locks: SIGSTOP');
      if (!db) return t.skip(`${kind} unreachable`);
      const TTL = 1_500;
      const holder = new Child(['hold', db.url, `stopped:${TTL}`]);
      try {
        const acquired = await holder.wait((m) => m.ev === 'acquired', 30_000);
        const locks = createLocks(db.storage, { owner: 'test' });
        // the holder keeps it alive: several extends accepted, nobody else gets in meanwhile
        await holder.wait((m) => m.ev === 'extend' && m.ok === true, 10_000);
        assert.equal(await locks.tryAcquire('stopped', { ttlMs: 30_000 }), null, 'held by the live holder');
        const n = holder.msgs.length;
        // stop it right after an extend completed (not inside a statement: SQLite's file lock)
        await holder.wait((m) => m.ev === 'extend' && m.ok === true, 10_000, n);
        holder.proc.kill('SIGSTOP');
        let seenExpiry = 0;
        let mine = null;
        const until = Date.now() + TTL + 15_000;
        while (!mine) {
          assert.ok(Date.now() < until, 'the stopped holder\'s lock never became free');
          const rows = await locks.list('stopped');
          seenExpiry = Math.max(seenExpiry, ...rows.map((r) => r.expiresAt.getTime()));
          mine = await locks.tryAcquire('stopped', { ttlMs: 30_000 });
          if (!mine) await new Promise((r) => setTimeout(r, 50));
        }
        assert.ok(mine.fence > (acquired.fence as number), 'the new holder has a larger fence');
        assert.ok(mine.expiresAt.getTime() - 30_000 >= seenExpiry, 'not granted before the stopped holder\'s TTL ran out');
        const from = holder.msgs.length;
        holder.proc.kill('SIGCONT');
        await holder.wait((m) => m.ev === 'extend' && m.ok === false, 10_000, from);
        const rel = await holder.wait((m) => m.ev === 'release', 10_000, from);
        assert.equal(rel.ok, false, "the old holder's release is rejected");
        assert.equal(await holder.exit(10_000), 0);
        assert.equal(holder.msgs.slice(from).filter((m) => m.ev === 'extend' && m.ok === true).length, 0, 'no extend accepted after the takeover');
        const [row] = await locks.list('stopped');
        assert.equal(row?.owner, 'test', 'the new holder still holds it');
        assert.equal(await locks.extend(mine), true, "the new holder's extend works: the stale release touched nothing");
        assert.equal(await locks.release(mine), true);
      } finally {
        holder.proc.kill('SIGCONT');
        holder.proc.kill('SIGKILL');
        await holder.exited;
        await db.drop();
      }
    });
  }
});
