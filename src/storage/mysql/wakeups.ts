/**
 * Wake-ups on MySQL/MariaDB, which have no LISTEN/NOTIFY. A subscribed storage parks one
 * connection, taken out of its pool for good, in `SELECT SLEEP(…)` under a marker naming its
 * tables; an enqueue of due jobs, once committed, interrupts that sleep with `KILL QUERY` (any
 * user may kill its own connections' queries), and the parked connection wakes its subscribers
 * and sleeps again (wakes coalesced: ../wake-gap.ts). Enqueuers find parked connections in the
 * process list.
 *
 * Costs: a parked connection sends one statement per PARK_SECONDS. An enqueue sends, after it
 * has returned, one KILL per parked connection it knows of (at most one per WAKE_GAP_MS each),
 * and reads the process list again, meanwhile, when it last did so LIST_TTL_MS ago. A known connection is forgotten when a KILL
 * of it fails: it is gone, and since a parked connection is closed, never handed back to a
 * pool, its id never names another connection's query. Only connections of the enqueuer's own
 * user are listed and killable, so workers under another user are not woken; nor is a
 * connection between two sleeps. Polling stays the backstop.
 *
 * A write in the caller's own transaction does not wake: its commit is the caller's, and waiting
 * for it would hold a connection of the pool for as long as the caller's transaction stays open.
 */
import { Backoff } from '../../core/backoff.js';
import type { RetryPolicy } from '../../core/retry.js';
import type { InsertResult } from '../../core/storage.js';
import { WAKE_GAP_MS, WakeSubscribers } from '../wake-gap.js';
import { type Db, type Leased, run } from './db.js';

/** How long one parked statement sleeps before it parks again. */
const PARK_SECONDS = 25;
/** How often at most an enqueuer reads the process list for connections parked since. */
const LIST_TTL_MS = 1_000;
/** A KILL of a connection that is gone ('Unknown thread id'). */
const ER_NO_SUCH_THREAD = 1094;
/** MariaDB's answer to a KILL QUERY of the sleep ('Query execution was interrupted'); MySQL's SLEEP returns 1 instead. */
const ER_QUERY_INTERRUPTED = 1317;

const RECONNECT: RetryPolicy = { kind: 'exponential', baseMs: 100, factor: 2, maxMs: 5_000, jitter: 'equal' };

const SQL = {
  // the first line is the marker the process list is searched for: no other statement begins with it
  park: (prefix: string): string => `-- leasehold park: [leasehold wake ${prefix}] sleep until an enqueue interrupts it
    SELECT SLEEP(?) AS slept`,
  // the marker built with CONCAT, so this statement's own text does not contain it
  parked: `-- leasehold parkedConnections: the connections parked for wake-ups on this database's tables
    SELECT ID AS id FROM information_schema.PROCESSLIST
    WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND INSTR(INFO, CONCAT('-- leasehold park: [leasehold', ' wake ', ?, ']')) = 1`,
  kill: `-- leasehold wake: interrupt a parked connection's sleep
    KILL QUERY ?`,
  connectionId: `-- leasehold connectionId: this connection's id, to tell our own parked connection apart
    SELECT CONNECTION_ID() AS id`,
};

/** One storage's wake-ups: the parked connection of its subscribers, and the KILLs its enqueues send. */
export class MysqlWakeups {
  private readonly subscribers = new WakeSubscribers();
  private readonly backoff = new Backoff(RECONNECT);
  private conn: Leased | null = null;
  private connId: number | null = null;
  private parking: Promise<void> | null = null;
  /** parked connections known to this storage's enqueues, and when the process list was last read */
  private readonly known = new Set<number>();
  private listedAt = -Infinity;
  private listing: Promise<void> | null = null;
  /** a read of the process list is to follow (a KILL found its connection gone) */
  private relistDue = false;
  /** per parked connection: when the last KILL went out, and the next one if it is waiting */
  private readonly killing = new Map<number, { sentAt: number; next: Promise<void> | null }>();
  private readonly sending = new Set<Promise<void>>();
  /** the KILL sent last: the next waits for it */
  private killTurn: Promise<void> = Promise.resolve();
  private stopped = false;
  /** stop() has begun */
  private closing = false;
  /** resolves the first subscribe once the first sleep is sent */
  private onParked: () => void = () => {};

  constructor(private readonly db: Db) {}

  /** Add a subscriber; the first parks a connection. Resolves, to its unsubscribe, once the first sleep is sent (or parking failed and is retried). */
  async subscribe(onWake: () => void): Promise<() => Promise<void>> {
    this.stopped = false;
    this.closing = false;
    this.subscribers.add(onWake);
    if (!this.parking) {
      const parked = new Promise<void>((r) => (this.onParked = r));
      this.parking = this.park();
      await parked;
    }
    return async () => {
      this.subscribers.delete(onWake);
      if (this.subscribers.size === 0) await this.unpark();
    };
  }

  /** After a commit that made jobs due: wake the parked connections (not waited for; errors are the poll's to cover). */
  jobsDue(): void {
    if (this.stopped) return;
    const p = this.sendWakes().catch(() => {});
    this.sending.add(p);
    void p.finally(() => this.sending.delete(p));
  }

  /** Unpark, and let the wakes still being sent go out (an enqueue just before close must wake); nothing is sent after. */
  async stop(): Promise<void> {
    this.closing = true;
    this.subscribers.clear();
    await this.unpark();
    await Promise.all(this.sending);
    this.stopped = true;
  }

  private async park(): Promise<void> {
    let everParked = false;
    while (this.subscribers.size > 0) {
      try {
        this.conn ??= await this.db.pool.getConnection();
        const [row] = await run<{ id: string }[]>(this.conn, SQL.connectionId);
        this.connId = Number(row?.id);
        if (everParked) this.subscribers.wake(); // back after a lost connection: catch up on what we missed
        everParked = true;
        this.backoff.reset();
        while (this.subscribers.size > 0) {
          const sleep = run<{ slept: number | string }[]>(this.conn, SQL.park(this.db.prefix), [PARK_SECONDS]);
          this.onParked();
          const [r] = await sleep.catch((e: unknown) => {
            if ((e as { errno?: unknown }).errno === ER_QUERY_INTERRUPTED) return [{ slept: 1 }];
            throw e;
          });
          if (Number(r?.slept) === 1) this.subscribers.wake();
        }
      } catch {
        this.onParked();
        this.conn?.destroy();
        this.conn = null;
        this.connId = null;
        if (this.subscribers.size > 0) await new Promise((r) => setTimeout(r, this.backoff.next()).unref());
      }
    }
    this.connId = null;
    // closed, not handed back: its id stays ours (see the top of this file)
    this.conn?.destroy();
    this.conn = null;
  }

  /** Interrupt our own sleep and close the parked connection. */
  private async unpark(): Promise<void> {
    const parking = this.parking;
    if (!parking) return;
    this.subscribers.clear();
    const id = this.connId;
    if (id !== null) await run(this.db.pool, SQL.kill, [id]).catch(() => this.conn?.destroy());
    await parking;
    this.parking = null;
  }

  private async sendWakes(): Promise<void> {
    const first = [...this.known].filter((id) => id !== this.connId).map((id) => this.kill(id));
    // the list is read beside the KILLs, not before them: a connection it adds is woken after it
    if (performance.now() - this.listedAt >= LIST_TTL_MS) this.listing ??= this.list().finally(() => (this.listing = null));
    await Promise.all([...first, this.listing]);
  }

  /**
   * Read the process list again soon: now, or after the read under way (which may have begun
   * before a connection parked, and may be the one whose KILL failed: never awaited here), at
   * most once per WAKE_GAP_MS.
   */
  private relist(): void {
    if (this.closing || this.relistDue) return;
    this.relistDue = true;
    const wait = Math.max(0, this.listedAt + WAKE_GAP_MS - performance.now());
    void Promise.all([this.listing, new Promise((r) => setTimeout(r, wait))]).then(() => {
      this.relistDue = false;
      if (this.closing) return;
      this.listing ??= this.list().finally(() => (this.listing = null));
      return this.listing;
    }).catch(() => {});
  }

  /** Read the process list; wake the parked connections not known before. */
  private async list(): Promise<void> {
    this.listedAt = performance.now();
    const rows = await run<{ id: string | number }[]>(this.db.pool, SQL.parked, [this.db.prefix]);
    const added = rows.map((r) => Number(r.id)).filter((id) => !this.known.has(id) && id !== this.connId);
    for (const id of added) this.known.add(id);
    await Promise.all(added.map((id) => this.kill(id)));
  }

  /**
   * A KILL of one parked connection sent after this commit: at once, or, within WAKE_GAP_MS of
   * the last one, once that much has passed (one send then covers every commit before it), so a
   * stream of enqueues costs the enqueuer and the parked connection a KILL per WAKE_GAP_MS.
   */
  private kill(id: number): Promise<void> {
    let k = this.killing.get(id);
    if (!k) this.killing.set(id, (k = { sentAt: -Infinity, next: null }));
    const state = k;
    if (state.next) return state.next;
    const wait = state.sentAt + WAKE_GAP_MS - performance.now();
    state.next = (wait > 0 ? new Promise((r) => setTimeout(r, wait)) : Promise.resolve()).then(async () => {
      // a commit from here on needs another KILL
      state.next = null;
      state.sentAt = performance.now();
      await this.oneAtATime(() => run(this.db.pool, SQL.kill, [id])).catch((e: unknown) => {
        // gone, or not ours: a later list adds it again if it is parked
        this.known.delete(id);
        this.killing.delete(id);
        // gone: its subscriber may have parked again on another connection, so look now, not a second later
        if ((e as { errno?: unknown }).errno === ER_NO_SUCH_THREAD) this.relist();
      });
    });
    return state.next;
  }

  /** Run KILLs one after another: MariaDB stops accepting connections while many KILLs from one process wait at once. */
  private oneAtATime<T>(send: () => Promise<T>): Promise<T> {
    const turn = this.killTurn.then(send);
    this.killTurn = turn.then(() => undefined, () => undefined);
    return turn;
  }
}

const byDb = new WeakMap<Db, MysqlWakeups>();

/** The wake-ups of the storage over `db`: its subscribe and its jobs' inserts share them. */
export function wakeupsOf(db: Db): MysqlWakeups {
  let w = byDb.get(db);
  if (!w) byDb.set(db, (w = new MysqlWakeups(db)));
  return w;
}

/** `value`, after waking parked workers if `due` (for writes whose transaction has just committed). */
export function wakeIf<T>(db: Db, due: boolean, value: T): T {
  if (due) wakeupsOf(db).jobsDue();
  return value;
}

/** Whether an insert made a job due at once (a new row, or a debounced holder given a new run_at, not in the future). */
export function madeDue(results: readonly InsertResult[]): boolean {
  return results.some((r) => r.outcome === 'created' ? r.job.runAt <= r.job.createdAt : r.outcome === 'replaced' && r.job.status === 'queued' && r.job.runAt <= r.job.updatedAt);
}
