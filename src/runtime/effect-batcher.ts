/**
 * Batches the effect ledger's writes (`ctx.once`) of a worker's concurrent attempts. Each
 * reserve and each record was one statement and one commit of its own, so a worker whose jobs
 * all call `ctx.once` was bound by two commits per job whatever its concurrency. Now everything
 * asked while a write is in flight goes into the next one: one commit serves the attempts that
 * asked meanwhile, and a lone call is written at once.
 *
 * A batch names each key once (see core/effects.ts): an item whose key is already in the batch
 * being gathered waits for the next. Each item is answered as if it had been asked alone, so
 * `once` reads the same either way. An adapter without batched calls gets one call per item.
 */
import type { EffectParams, EffectRecord, EffectReservation, Storage } from '../core/storage.js';

/** Items per write: enough for any concurrency, small enough for one quick statement. */
const MAX_BATCH = 500;
/**
 * Writes of one kind in flight at once. The second starts while the first commits, for the
 * attempts that asked meanwhile; more would split the waiting attempts into smaller batches.
 */
const MAX_WRITES = 2;

interface Waiting<P, R> {
  params: P;
  resolve: (r: R) => void;
  reject: (e: unknown) => void;
}

/** One kind of ledger write (reserve or record), gathered into batches of distinct keys. */
class LedgerWrites<P extends { key: string }, R> {
  #queue: Waiting<P, R>[] = [];
  #writes = 0;
  #scheduled = false;

  constructor(
    private readonly write: (batch: P[]) => Promise<R[]>,
    /** one item after its batch failed with `batchError` */
    private readonly writeOne: (item: P, batchError: unknown) => Promise<R>,
  ) {}

  ask(params: P): Promise<R> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ params, resolve, reject });
      if (!this.#scheduled) {
        // the calls made before the stack empties join the first batch. A microtask, not a
        // later turn of the event loop: the handler that called once keeps its place ahead of
        // timers (a heartbeat due meanwhile) as when each call was written on its own
        this.#scheduled = true;
        queueMicrotask(this.#onScheduled);
      }
    });
  }

  readonly #onScheduled = (): void => {
    this.#scheduled = false;
    this.#pump();
  };

  #pump(): void {
    while (this.#queue.length > 0 && this.#writes < MAX_WRITES) {
      const batch = this.#take();
      this.#writes++;
      void this.#send(batch).finally(() => {
        this.#writes--;
        this.#pump();
      });
    }
  }

  /** The oldest waiting items with distinct keys, up to MAX_BATCH; the rest stay queued in order. */
  #take(): Waiting<P, R>[] {
    const batch: Waiting<P, R>[] = [];
    const keys = new Set<string>();
    const rest: Waiting<P, R>[] = [];
    for (const w of this.#queue) {
      if (batch.length < MAX_BATCH && !keys.has(w.params.key)) {
        keys.add(w.params.key);
        batch.push(w);
      } else rest.push(w);
    }
    this.#queue = rest;
    return batch;
  }

  /**
   * A failed batch is asked again item by item, so that one item the database refuses (a result
   * that is not JSON, a key too long for the index) fails only its own caller, not the attempts
   * that happened to share its batch (their effects may have run already). Each caller then
   * gets its own answer or error, and `once` decides what that means for it.
   */
  async #send(batch: Waiting<P, R>[]): Promise<void> {
    let results: R[];
    try {
      results = await this.write(batch.map((w) => w.params));
    } catch (e) {
      await Promise.all(batch.map((w) => this.writeOne(w.params, e).then(w.resolve, w.reject)));
      return;
    }
    batch.forEach((w, i) => w.resolve(results[i]!));
  }
}

export class EffectBatcher {
  readonly #reserves: LedgerWrites<EffectParams, EffectReservation> | null;
  readonly #records: LedgerWrites<EffectRecord, boolean> | null;

  constructor(private readonly storage: Storage) {
    const { reserveEffects, completeEffects } = storage;
    // a reserve asked again finds its own pending row if the failed batch landed after all
    this.#reserves = reserveEffects ? new LedgerWrites((b) => reserveEffects.call(storage, b), (p) => storage.reserveEffect(p)) : null;
    // a record asked again finds nothing pending if the failed batch landed (its connection
    // dropped after the COMMIT went out): that "false" is the batch's error, not a lost lease,
    // so `once` retries and then asks the ledger whether the record is there
    this.#records = completeEffects
      ? new LedgerWrites(
          (b) => completeEffects.call(storage, b),
          async (p, batchError) => {
            if (await storage.completeEffect(p)) return true;
            throw batchError;
          },
        )
      : null;
  }

  reserve(p: EffectParams): Promise<EffectReservation> {
    return this.#reserves ? this.#reserves.ask(p) : this.storage.reserveEffect(p);
  }

  record(p: EffectRecord): Promise<boolean> {
    return this.#records ? this.#records.ask(p) : this.storage.completeEffect(p);
  }
}
