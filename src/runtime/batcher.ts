/**
 * Gathers calls into batched writes: everything asked while a write is in flight goes into the
 * next one, so under load one statement and one commit serve many callers, and a lone call is
 * written at once. The completer (finishes) and the effect batcher (`ctx.once`) are built on it.
 */

/** Who hears how one item's write went; an object of the caller's, so no promise is made per item. */
export interface BatchSink<R> {
  written(result: R): void;
  writeFailed(error: unknown): void;
}

export interface BatcherOptions<P, R> {
  /** Write a batch; results in input order. */
  write(batch: P[]): Promise<R[]>;
  /** One item after its batch failed with `error` (default: the item fails with that error). */
  writeOne?(item: P, error: unknown): Promise<R>;
  /** Items per write. */
  maxBatch: number;
  /** Writes in flight at once. */
  maxWrites: number;
  /** A write beyond the first starts only for a batch at least this large (default 1). */
  minSecondBatch?: number;
  /** Items sharing this key never share a batch: the later one waits for the next write. */
  distinctKey?(item: P): string;
  /** When the first batch is cut after a quiet spell: calls made until then join it. */
  defer(run: () => void): void;
}

interface Queued<P, R> {
  params: P;
  sink: BatchSink<R>;
}

export class Batcher<P, R> {
  #queue: Queued<P, R>[] = [];
  #writes = 0;
  #scheduled = false;
  #idle: (() => void)[] = [];

  constructor(private readonly opts: BatcherOptions<P, R>) {}

  /** Queue an item; `sink` hears how it went. */
  submit(params: P, sink: BatchSink<R>): void {
    this.#queue.push({ params, sink });
    if (!this.#scheduled) {
      this.#scheduled = true;
      this.opts.defer(this.#onDeferred);
    }
  }

  ask(params: P): Promise<R> {
    return new Promise((resolve, reject) => this.submit(params, { written: resolve, writeFailed: reject }));
  }

  /** Resolves once everything queued so far is written. */
  idle(): Promise<void> {
    if (this.#quiet()) return Promise.resolve();
    return new Promise((r) => this.#idle.push(r));
  }

  readonly #onDeferred = (): void => {
    this.#scheduled = false;
    this.#pump();
  };

  #quiet(): boolean {
    return this.#queue.length === 0 && this.#writes === 0 && !this.#scheduled;
  }

  #pump(): void {
    const { maxWrites, minSecondBatch = 1 } = this.opts;
    while (this.#queue.length > 0 && (this.#writes === 0 || (this.#writes < maxWrites && this.#queue.length >= minSecondBatch))) {
      const batch = this.#take();
      this.#writes++;
      void this.#send(batch).finally(() => {
        this.#writes--;
        this.#pump();
      });
    }
    if (this.#quiet()) for (const r of this.#idle.splice(0)) r();
  }

  /** The oldest queued items, up to maxBatch, with distinct keys when asked; the rest stay in order. */
  #take(): Queued<P, R>[] {
    const { maxBatch, distinctKey } = this.opts;
    if (!distinctKey) return this.#queue.splice(0, maxBatch);
    const batch: Queued<P, R>[] = [];
    const keys = new Set<string>();
    const rest: Queued<P, R>[] = [];
    for (const q of this.#queue) {
      const key = distinctKey(q.params);
      if (batch.length < maxBatch && !keys.has(key)) {
        keys.add(key);
        batch.push(q);
      } else rest.push(q);
    }
    this.#queue = rest;
    return batch;
  }

  /**
   * A failed batch goes item by item through `writeOne` where there is one, so an item the
   * database refuses fails only its own caller, not those that happened to share its batch.
   */
  async #send(batch: Queued<P, R>[]): Promise<void> {
    let results: R[];
    try {
      results = await this.opts.write(batch.map((q) => q.params));
    } catch (e) {
      const one = this.opts.writeOne;
      if (!one) for (const q of batch) q.sink.writeFailed(e);
      else await Promise.all(batch.map((q) => one(q.params, e).then((r) => q.sink.written(r), (err: unknown) => q.sink.writeFailed(err))));
      return;
    }
    batch.forEach((q, i) => q.sink.written(results[i] as R));
  }
}
