/**
 * Batches the effect ledger's writes (`ctx.once`) of a worker's concurrent attempts, so a
 * worker whose jobs all call `ctx.once` is not bound by two commits per job: everything asked
 * while a write is in flight goes into the next one, and a lone call is written at once.
 *
 * A batch names each key once (see core/effects.ts): an item whose key is already in the batch
 * being gathered waits for the next. A failed batch is asked again item by item, so one item
 * the database refuses fails only its own caller. Each item is answered as if it had been asked
 * alone, so `once` reads the same either way. An adapter without batched calls gets one call per item.
 */
import type { EffectParams, EffectRecord, EffectReservation, Storage } from '../core/storage.js';
import { Batcher } from './batcher.js';

/** Items per write: enough for any concurrency, small enough for one quick statement. */
const MAX_BATCH = 500;
/**
 * Writes of one kind in flight at once. The second starts while the first commits, for the
 * attempts that asked meanwhile; more would split the waiting attempts into smaller batches.
 */
const MAX_WRITES = 2;

/**
 * The calls made before the stack empties join the first batch. A microtask, not a later turn
 * of the event loop: the handler that called once keeps its place ahead of timers (a heartbeat
 * due meanwhile) as when each call was written on its own.
 */
const ledgerBatch = { maxBatch: MAX_BATCH, maxWrites: MAX_WRITES, distinctKey: (p: { key: string }) => p.key, defer: queueMicrotask };

export class EffectBatcher {
  readonly #reserves: Batcher<EffectParams, EffectReservation> | null;
  readonly #records: Batcher<EffectRecord, boolean> | null;

  constructor(private readonly storage: Storage) {
    const { reserveMany, completeMany } = storage.effects;
    this.#reserves = reserveMany
      ? new Batcher<EffectParams, EffectReservation>({
          ...ledgerBatch,
          write: (items) => reserveMany.call(storage.effects, { items }),
          // a reserve asked again finds its own pending row if the failed batch landed after all
          writeOne: (p) => storage.effects.reserve(p),
        })
      : null;
    this.#records = completeMany
      ? new Batcher<EffectRecord, boolean>({
          ...ledgerBatch,
          write: (items) => completeMany.call(storage.effects, { items }),
          // a record asked again finds nothing pending if the failed batch landed (its connection
          // dropped after the COMMIT went out): that "false" is the batch's error, not a lost
          // lease, so `once` retries and then asks the ledger whether the record is there
          writeOne: async (p, batchError) => {
            if (await storage.effects.complete(p)) return true;
            throw batchError;
          },
        })
      : null;
  }

  reserve(p: EffectParams): Promise<EffectReservation> {
    return this.#reserves ? this.#reserves.ask(p) : this.storage.effects.reserve(p);
  }

  record(p: EffectRecord): Promise<boolean> {
    return this.#records ? this.#records.ask(p) : this.storage.effects.complete(p);
  }
}
