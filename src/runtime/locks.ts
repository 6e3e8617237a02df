/**
 * Distributed locks and semaphores on the database: named, with a TTL, an owner and a fencing
 * token. `withLock` keeps the lock alive while `fn` runs (extending every third of the TTL) and
 * aborts `fn`'s signal as soon as the lock is lost — a holder that was paused past its TTL
 * learns it at its next extend, which the database rejects, and so does its release.
 *
 * Fencing: pass `lock.fence` to the resource you protect and have it refuse writes with a
 * smaller fence than the largest it has seen; that is what makes a lock safe against a paused
 * holder that wakes up after someone else took over.
 */
import { hostname } from 'node:os';
import type { LockGrant } from '../core/index.js';
import { LeaseholdError, validateLockParams } from '../core/index.js';
import type { Storage } from '../core/storage.js';

/** Options for taking a lock once ({@link Locks.tryAcquire}). */
export interface LockOptions {
  /** how long the lock holds without an extend (default 30 s) */
  ttlMs?: number;
  /** semaphore size: up to this many holders at once (default 1: a mutex); every caller of a name passes the same while it is held */
  slots?: number;
  /** shown in `locks list` (default host:pid) */
  owner?: string;
}

/** Options for waiting for a lock ({@link Locks.acquire}, {@link Locks.withLock}). */
export interface AcquireOptions extends LockOptions {
  /** give up after this long with LOCK_TIMEOUT (default 0: one try, then LOCK_TIMEOUT) */
  timeoutMs?: number;
  /** between tries (default 100 ms, jittered) */
  retryMs?: number;
  /** stop waiting when it aborts */
  signal?: AbortSignal;
}

/** A held lock: present it to extend and release, and pass its `fence` to what it protects. */
export interface Lock extends LockGrant {
  /** the TTL it was taken with, in ms; extends renew by this much */
  readonly ttlMs: number;
}

/** The lock was still held by others when `timeoutMs` ran out (code `LOCK_TIMEOUT`). */
export class LockTimeoutError extends LeaseholdError {
  constructor(name: string, ms: number) {
    super('LOCK_TIMEOUT', `could not acquire lock ${name} within ${ms} ms`);
  }
}

/** The lock expired or was taken over while held (code `LOCK_LOST`); work done under it may be stale. */
export class LockLostError extends LeaseholdError {
  constructor(name: string) {
    super('LOCK_LOST', `lock ${name} was lost (expired or taken over); the work done under it may be stale`);
  }
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/** Named locks and semaphores on the storage's database, from {@link createLocks}. */
export class Locks {
  readonly #storage: Storage;
  readonly #owner: string;
  /** when the acquire that granted a lock was sent: its TTL cannot have started earlier */
  readonly #sentAt = new WeakMap<Lock, number>();

  constructor(storage: Storage, opts: { owner?: string } = {}) {
    this.#storage = storage;
    this.#owner = opts.owner ?? `${hostname()}:${process.pid}`;
  }

  /** One try: the lock, or null when all its slots are held. */
  async tryAcquire(name: string, opts: LockOptions = {}): Promise<Lock | null> {
    const ttlMs = opts.ttlMs ?? 30_000;
    const slots = opts.slots ?? 1;
    const owner = opts.owner ?? this.#owner;
    validateLockParams({ name, ttlMs, slots, owner });
    const sentAt = Date.now();
    const g = await this.#storage.locks.acquire({ name, owner, ttlMs, slots });
    if (!g) return null;
    const lock = { ...g, ttlMs };
    this.#sentAt.set(lock, sentAt);
    return lock;
  }

  /** Wait until acquired, or throw LockTimeoutError after `timeoutMs`. */
  async acquire(name: string, opts: AcquireOptions = {}): Promise<Lock> {
    const timeoutMs = opts.timeoutMs ?? 0;
    const until = Date.now() + timeoutMs;
    for (;;) {
      const lock = await this.tryAcquire(name, opts);
      if (lock) return lock;
      const left = until - Date.now();
      if (left <= 0 || opts.signal?.aborted) throw new LockTimeoutError(name, timeoutMs);
      await sleep(Math.min(left, (opts.retryMs ?? 100) * (0.5 + Math.random())), opts.signal);
    }
  }

  /** Renew for another TTL; false when the lock is no longer ours. */
  async extend(lock: Lock, ttlMs = lock.ttlMs): Promise<boolean> {
    validateLockParams({ name: lock.name, ttlMs });
    return this.#storage.locks.extend({ name: lock.name, token: lock.token, ttlMs });
  }

  /** Let go; false when it was no longer ours (expired or taken over). */
  async release(lock: Lock): Promise<boolean> {
    return this.#storage.locks.release({ name: lock.name, token: lock.token });
  }

  /**
   * Acquire (waiting up to `timeoutMs`, default the TTL), run `fn` while extending the lock every
   * third of its TTL, release. When an extend is rejected (or failing calls outlast the TTL),
   * `fn`'s signal aborts with LockLostError and withLock rejects with it once `fn` settles.
   */
  async withLock<T>(name: string, opts: AcquireOptions, fn: (signal: AbortSignal, lock: Lock) => Promise<T> | T): Promise<T> {
    const lock = await this.acquire(name, { ...opts, timeoutMs: opts.timeoutMs ?? opts.ttlMs ?? 30_000 });
    const ac = new AbortController();
    // The lock is presumed lost a little before TTL after the request that last granted or
    // extended it was SENT (the database started the TTL no earlier), so fn hears of the loss
    // before the database can grant the lock to anyone else.
    const margin = Math.min(1_000, Math.floor(lock.ttlMs / 10));
    let expiresAt = (this.#sentAt.get(lock) ?? Date.now()) + lock.ttlMs - margin;
    const lose = () => ac.abort(new LockLostError(name));
    let expiry: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(expiry);
      expiry = setTimeout(lose, Math.max(0, expiresAt - Date.now()));
    };
    arm();
    const timer = setInterval(() => {
      if (ac.signal.aborted) return;
      const sentAt = Date.now();
      this.extend(lock).then(
        (ok) => {
          if (!ok) return lose();
          if (sentAt + lock.ttlMs - margin > expiresAt && !ac.signal.aborted) {
            expiresAt = sentAt + lock.ttlMs - margin;
            arm();
          }
        },
        () => undefined, // a failing call: the expiry timer decides
      );
    }, Math.max(10, Math.floor(lock.ttlMs / 3)));
    try {
      const out = await fn(ac.signal, lock);
      if (ac.signal.aborted) throw ac.signal.reason;
      return out;
    } finally {
      clearInterval(timer);
      clearTimeout(expiry);
      if (!ac.signal.aborted) await this.release(lock).catch(() => false);
    }
  }

  /** The locks held now (all, or one name's slots), with their owners and expiry. */
  list(name?: string) {
    return this.#storage.locks.list(name === undefined ? {} : { name });
  }
}

/**
 * Locks on the storage's database, shared by every process that uses it.
 *
 * @example
 * ```ts
 * const locks = createLocks(storage);
 * await locks.withLock('nightly-report', { ttlMs: 60_000 }, async (signal, lock) => {
 *   await buildReport({ signal, fence: lock.fence });
 * });
 * ```
 */
export function createLocks(storage: Storage, opts?: { owner?: string }): Locks {
  return new Locks(storage, opts);
}
