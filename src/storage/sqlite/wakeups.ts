/**
 * Wake-ups on SQLite without polling: every commit in WAL mode appends to the database's -wal
 * file, so a watch on the file's directory (inotify on Linux, FSEvents or kqueue elsewhere)
 * sees the commits of every process on this machine as they land. A change only means "maybe
 * something became due": subscribers are woken and the worker's claim decides.
 *
 * The directory is watched rather than the files: the -wal file may not exist yet, and a
 * checkpoint truncates it, or the last connection to close deletes it, while a watch on the
 * directory sees it come back. Our own commits fire it too (a claim that finds nothing writes
 * nothing, so an idle worker does not feed itself); wakes are coalesced (../wake-gap.ts).
 *
 * After a change the watch rests for WAKE_GAP_MS, closed: a drain commits thousands of times a
 * second, and each event would cost the draining process a callback. Back, it compares the
 * files with how it left them (inode, size, modification time) and wakes if they changed. A
 * commit that leaves all three alike (the WAL written again from its start, within the same
 * tick of the file system's clock) goes unseen until the poll. A network filesystem may never
 * report a change: polling stays the backstop, as everywhere.
 */
import { type FSWatcher, statSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import { Backoff } from '../../core/backoff.js';
import type { RetryPolicy } from '../../core/retry.js';
import { WAKE_GAP_MS, WakeSubscribers } from '../wake-gap.js';

/** A watch that broke (the directory went away, out of inotify watches) is set up again after these waits. */
const REWATCH: RetryPolicy = { kind: 'exponential', baseMs: 1_000, factor: 2, maxMs: 30_000, jitter: 'equal' };

/** Calls its subscribers soon after the database file or its WAL changes; shared by every subscriber of one storage. */
export class FileWakeups {
  private readonly subscribers = new WakeSubscribers();
  private readonly dir: string;
  private readonly names: ReadonlySet<string>;
  private readonly files: readonly string[];
  private readonly backoff = new Backoff(REWATCH);
  private watcher: FSWatcher | null = null;
  /** the rest after a change, or the wait before a broken watch is tried again */
  private timer: NodeJS.Timeout | null = null;

  /** `file`: the database's absolute path (never '' : an in-memory database has no file to watch). */
  constructor(file: string) {
    this.dir = dirname(file);
    const base = basename(file);
    this.names = new Set([base, `${base}-wal`]);
    this.files = [file, `${file}-wal`];
  }

  /** Add a subscriber; the watch starts with the first. Resolves to its unsubscribe. */
  async subscribe(onWake: () => void): Promise<() => Promise<void>> {
    this.subscribers.add(onWake);
    if (!this.watcher && !this.timer) this.arm(null);
    return async () => {
      this.subscribers.delete(onWake);
      if (this.subscribers.size === 0) this.stop();
    };
  }

  /** Drop every subscriber and the watch. */
  stop(): void {
    this.subscribers.clear();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.watcher?.close();
    this.watcher = null;
  }

  /** Watch; `left`: the files as the last watch left them, so a change while none was open still wakes. */
  private arm(left: string | null): void {
    try {
      const w = watch(this.dir, { persistent: false }, (_event, name) => {
        // no name (some platforms): it may be ours
        if (this.watcher === w && (name === null || this.names.has(String(name)))) this.changed();
      });
      w.on('error', () => this.broken(w));
      this.watcher = w;
      this.backoff.reset();
    } catch {
      return this.broken(null);
    }
    if (left !== null && (left.includes('?') || this.state() !== left)) this.subscribers.wake();
  }

  /** Wake, and rest the watch (see the top of this file). */
  private changed(): void {
    this.watcher?.close();
    this.watcher = null;
    const left = this.state();
    this.subscribers.wake();
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.subscribers.size > 0) this.arm(left);
    }, WAKE_GAP_MS);
    this.timer.unref();
  }

  /** The files' inode, size and modification time ('-' for one that does not exist, '?' for one that cannot be read: it wakes). */
  private state(): string {
    return this.files
      .map((f) => {
        try {
          const st = statSync(f, { bigint: true, throwIfNoEntry: false });
          return st ? `${st.ino}:${st.size}:${st.mtimeNs}` : '-';
        } catch {
          return '?';
        }
      })
      .join('|');
  }

  /** The watch failed or could not start: polling carries on alone until it is back, then one wake for what it missed. */
  private broken(w: FSWatcher | null): void {
    w?.close();
    if (this.watcher === w) this.watcher = null;
    if (this.subscribers.size === 0 || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.subscribers.size === 0) return;
      this.arm(null);
      if (this.watcher) this.subscribers.wake();
    }, this.backoff.next());
    this.timer.unref();
  }
}
