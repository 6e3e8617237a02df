/**
 * The LISTEN side of wake-ups: one dedicated connection (not from the pool: a pooled client
 * would be handed to other queries) listening on NOTIFY_CHANNEL, calling every subscriber when
 * a notification for this schema arrives. When the connection drops it reconnects by itself
 * with backoff (100 ms doubling to 5 s) and, once back, wakes every subscriber once, since
 * notifications sent while it was down are gone. Polling stays the backstop throughout.
 */
import pg from 'pg';

/** The channel enqueues, retries and due-again finishes notify on; the payload is the schema. */
export const NOTIFY_CHANNEL = 'leasehold_jobs';

/** SQL of the listener (a constant channel name: LISTEN takes no parameters). */
const LISTEN_SQL = `-- leasehold subscribe: receive a notification whenever jobs become due
LISTEN ${NOTIFY_CHANNEL}`;

const MIN_RETRY_MS = 100;
const MAX_RETRY_MS = 5_000;

export class PgListener {
  private readonly subscribers = new Set<() => void>();
  private client: pg.Client | null = null;
  private opening: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private retryMs = MIN_RETRY_MS;
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
    this.retryMs = MIN_RETRY_MS;
    if (this.everConnected) this.wakeAll(); // back after a drop: catch up on what we missed
    this.everConnected = true;
  }

  private retryLater(): void {
    if (this.subscribers.size === 0 || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.subscribers.size > 0 && !this.client) this.opening ??= this.open();
    }, this.retryMs);
    this.timer.unref();
    this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
  }
}
