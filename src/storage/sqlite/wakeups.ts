/**
 * Wake-ups on SQLite without polling: every commit in WAL mode appends to the database's -wal
 * file, so a watch on the file's directory (inotify on Linux, FSEvents or kqueue elsewhere)
 * sees the commits of every process on this machine as they land. A change only means "maybe
 * something became due": subscribers are woken and the worker's claim decides.
 *
 * The directory is watched rather than the files: the -wal file may not exist yet, and a
 * checkpoint truncates it, or the last connection to close deletes it, while a watch on the
 * directory sees it come back. Our own commits fire it too (a claim that finds nothing writes
 * nothing, so an idle worker does not feed itself); wakes are coalesced to one per WAKE_GAP_MS,
 * the first at once and a trailing one for what came after it, so a busy file costs a few
 * claims per second, not one per commit. A network filesystem may never report a change:
 * polling stays the backstop, as everywhere.
 */
import { type FSWatcher, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import { Backoff } from '../../core/backoff.js';
import type { RetryPolicy } from '../../core/retry.js';

/** At most one wake per this many ms: the first at once, later changes in one trailing wake. */
export const WAKE_GAP_MS = 50;

/** A watch that broke (the directory went away, out of inotify watches) is set up again after these waits. */
const REWATCH: RetryPolicy = { kind: 'exponential', baseMs: 1_000, factor: 2, maxMs: 30_000, jitter: 'equal' };

/** Calls its subscribers soon after the database file or its WAL changes; shared by every subscriber of one storage. */
export class FileWakeups {
  private readonly subscribers = new Set<() => void>();
  private readonly names: ReadonlySet<string>;
  private readonly dir: string;
  private readonly backoff = new Backoff(REWATCH);
  private watcher: FSWatcher | null = null;
  private rewatch: NodeJS.Timeout | null = null;
  private trailing: NodeJS.Timeout | null = null;
  private lastWakeAt = -Infinity;

  /** `file`: the database's absolute path (never '' : an in-memory database has no file to watch). */
  constructor(file: string) {
    this.dir = dirname(file);
    const base = basename(file);
    this.names = new Set([base, `${base}-wal`]);
  }

  /** Add a subscriber; the watch starts with the first. Resolves to its unsubscribe. */
  async subscribe(onWake: () => void): Promise<() => Promise<void>> {
    this.subscribers.add(onWake);
    if (!this.watcher && !this.rewatch) this.start();
    return async () => {
      this.subscribers.delete(onWake);
      if (this.subscribers.size === 0) this.stop();
    };
  }

  /** Drop every subscriber and the watch. */
  stop(): void {
    this.subscribers.clear();
    for (const t of [this.rewatch, this.trailing]) if (t) clearTimeout(t);
    this.rewatch = this.trailing = null;
    this.watcher?.close();
    this.watcher = null;
  }

  private start(): void {
    try {
      const w = watch(this.dir, { persistent: false }, (_event, name) => {
        // no name (some platforms): it may be ours
        if (name === null || this.names.has(String(name))) this.changed();
      });
      w.on('error', () => this.broken(w));
      this.watcher = w;
      this.backoff.reset();
    } catch {
      this.broken(null);
    }
  }

  /** The watch failed or could not start: polling carries on alone until it is back, then one wake for what it missed. */
  private broken(w: FSWatcher | null): void {
    w?.close();
    if (this.watcher === w) this.watcher = null;
    if (this.subscribers.size === 0 || this.rewatch) return;
    this.rewatch = setTimeout(() => {
      this.rewatch = null;
      if (this.subscribers.size === 0) return;
      this.start();
      if (this.watcher) this.changed();
    }, this.backoff.next());
    this.rewatch.unref();
  }

  private changed(): void {
    if (this.trailing) return;
    const wait = this.lastWakeAt + WAKE_GAP_MS - performance.now();
    if (wait <= 0) return this.wakeAll();
    this.trailing = setTimeout(() => {
      this.trailing = null;
      this.wakeAll();
    }, wait);
    this.trailing.unref();
  }

  private wakeAll(): void {
    this.lastWakeAt = performance.now();
    for (const fn of this.subscribers) {
      try {
        fn();
      } catch {
        // a subscriber's failure is its own; the others still wake
      }
    }
  }
}
