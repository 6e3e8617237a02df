/**
 * The LISTEN side of wake-ups: one dedicated connection (not from the pool: a pooled client
 * would be handed to other queries) listening on NOTIFY_CHANNEL, calling every subscriber when
 * a notification for this schema arrives. When the connection drops it reconnects by itself
 * with backoff and, once back, wakes every subscriber once, since notifications sent while it
 * was down are gone. Polling stays the backstop throughout.
 */
import pg from 'pg';
import { Backoff } from '../../core/backoff.js';
import type { RetryPolicy } from '../../core/retry.js';

/** The channel enqueues, retries and due-again finishes notify on; the payload is the schema. */
export const NOTIFY_CHANNEL = 'leasehold_jobs';

// LISTEN takes no parameters: the channel is a constant
const LISTEN_SQL = `-- leasehold subscribe: receive a notification whenever jobs become due
LISTEN ${NOTIFY_CHANNEL}`;

/** Jittered, so the workers of a restarted server do not all reconnect in the same instant. */
const RECONNECT: RetryPolicy = { kind: 'exponential', baseMs: 100, factor: 2, maxMs: 5_000, jitter: 'equal' };

/** One dedicated LISTEN connection that calls its subscribers when jobs of its schema become due; reconnects by itself. */
export class PgListener {
  private readonly subscribers = new Set<() => void>();
  private readonly backoff = new Backoff(RECONNECT);
  private client: pg.Client | null = null;
  private opening: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private everConnected = false;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly schema: string,
  ) {}

  /** Add a subscriber; resolves once the first LISTEN is in place (or has failed and will be retried). */
  async subscribe(onWake: () => void): Promise<() => Promise<void>> {
    this.subscribers.add(onWake);
    if (!this.client && !this.timer) await (this.opening ??= this.open());
    return async () => {
      this.subscribers.delete(onWake);
      if (this.subscribers.size === 0) await this.stop();
    };
  }

  /** Drop every subscriber and the connection. */
  async stop(): Promise<void> {
    this.subscribers.clear();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.opening;
    const c = this.client;
    this.client = null;
    await c?.end().catch(() => {});
  }

  private wakeAll(): void {
    for (const fn of this.subscribers) {
      try {
        fn();
      } catch {
        // a subscriber's failure is its own; the others still wake
      }
    }
  }

  private async open(): Promise<void> {
    const c = new pg.Client(this.config);
    let gone = false;
    const lost = () => {
      if (gone) return;
      gone = true;
      if (this.client === c) this.client = null;
      c.end().catch(() => {});
      this.retryLater();
    };
    c.on('error', lost);
    c.on('end', lost);
    c.on('notification', (n) => {
      if (n.channel === NOTIFY_CHANNEL && n.payload === this.schema) this.wakeAll();
    });
    try {
      await c.connect();
      await c.query(LISTEN_SQL);
    } catch {
      lost();
      return;
    } finally {
      this.opening = null;
    }
    if (gone) return;
    if (this.subscribers.size === 0) {
      gone = true;
      await c.end().catch(() => {});
      return;
    }
    this.client = c;
    this.backoff.reset();
    if (this.everConnected) this.wakeAll(); // back after a drop: catch up on what we missed
    this.everConnected = true;
  }

  private retryLater(): void {
    if (this.subscribers.size === 0 || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.subscribers.size > 0 && !this.client) this.opening ??= this.open();
    }, this.backoff.next());
    this.timer.unref();
  }
}
