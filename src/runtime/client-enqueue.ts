/**
 * The client's enqueue paths: each item validated and given its defaults (unknown type, schema,
 * JSON, size, options) before one insert writes them all, traced, and local workers woken. The
 * synchronous one writes in the caller's synchronous transaction (better-sqlite3's `db.transaction`).
 */
import type { JobDefaults } from '../core/index.js';
import { NotSupportedError, UnknownJobTypeError, ValidationError, buildNewJob } from '../core/index.js';
import type { InsertResult, NewJob, Storage, SyncJobInsert } from '../core/storage.js';
import { NO_OPTIONS, defaultsFor, enqueueAnswers, sameValueZero, withKeyOf } from './client-input.js';
import { LocalBus } from './env.js';
import { type JobRegistry, validateWithSchema, validateWithSchemaSync } from './job-definition.js';
import type { EnqueueItem, EnqueuedJob } from './job-types.js';
import { type SendSpan, startSend } from './tracing.js';

/** Validates and writes a client's enqueues. */
export class Enqueuer {
  readonly #bus: LocalBus;

  constructor(
    readonly storage: Storage,
    private readonly registry: JobRegistry | null,
    private readonly defaults: JobDefaults,
    private readonly maxPayloadBytes: number,
  ) {
    this.#bus = LocalBus.for(storage);
  }

  /** All items written in one transaction, or (on bad input) none. */
  async enqueueMany(items: readonly EnqueueItem[]): Promise<EnqueuedJob[]> {
    if (items.length === 0) return [];
    const tx = this.#sharedTx(items);
    // Per job this is the hot path of a bulk enqueue: validate synchronously and await only a
    // payload schema (the one asynchronous check), item by item as before.
    const rows: NewJob[] = [];
    for (const item of items) {
      const row = this.#prepare(item, null);
      rows.push(row instanceof Promise ? await row : row);
    }
    const send = startSend(rows);
    let results;
    try {
      results = await this.storage.jobs.insert({ jobs: rows, ...tx === undefined ? undefined : { tx } });
    } catch (e) {
      send?.failed(e);
      throw e;
    }
    return this.#answer(results, send);
  }

  /**
   * As {@link Enqueuer.enqueueMany}, written on the caller's handle in their open transaction
   * before it returns: every check runs synchronously and nothing is awaited.
   *
   * @param caller - the method called, for errors
   */
  enqueueManySync(items: readonly EnqueueItem[], caller: string): EnqueuedJob[] {
    if (items.length === 0) return [];
    const store = this.storage.jobs as Partial<SyncJobInsert>;
    if (typeof store.insertSync !== 'function') throw new NotSupportedError(caller, this.storage.dialect);
    const tx = this.#sharedTx(items);
    if (tx === undefined || tx === null) throw new ValidationError('INVALID_OPTION', `${caller} writes only in your transaction: give it as \`tx\` (or await enqueue(…) without one)`);
    const rows = items.map((item) => this.#prepare(item, caller) as NewJob);
    const send = startSend(rows);
    let results;
    try {
      results = store.insertSync({ jobs: rows, tx });
    } catch (e) {
      send?.failed(e);
      throw e;
    }
    return this.#answer(results, send);
  }

  /** The insert's results as jobs, the span ended, and local workers woken for new ones. */
  #answer(results: InsertResult[], send: SendSpan | undefined): EnqueuedJob[] {
    send?.written(results.map((r) => r.job.id));
    const { jobs, woken: created } = enqueueAnswers(results);
    // Inside a caller's transaction the job is not visible until they commit; waking local
    // workers early only costs them one empty claim.
    if (created) this.#bus.jobsEnqueued();
    return jobs;
  }

  /** One item checked and given its defaults, as `enqueueMany` does before it writes (a workflow's jobs). */
  async prepare(item: EnqueueItem): Promise<NewJob> {
    return this.#prepare(item, null);
  }

  /** The one `tx` every item gives (or none), where the storage can write in one. */
  #sharedTx(items: readonly EnqueueItem[]): unknown {
    const tx = items[0]?.options?.tx;
    for (const item of items) {
      if (!sameValueZero(item.options?.tx, tx)) throw new ValidationError('INVALID_OPTION', 'enqueueMany: every item must use the same tx');
    }
    if (tx !== undefined && !this.storage.capabilities.transactionalEnqueue) {
      throw new ValidationError('INVALID_OPTION', `the ${this.storage.dialect} storage cannot enqueue inside your transaction`);
    }
    return tx;
  }

  /**
   * Validation and defaults for one item; a promise only when a payload schema must run and no
   * `syncCaller` is given (then the schema must answer at once).
   */
  #prepare(item: EnqueueItem, syncCaller: string | null): NewJob | Promise<NewJob> {
    const options = item.options ?? NO_OPTIONS;
    const now = options.unique?.mode === 'period' ? Date.now() : 0;
    if (!this.registry) return buildNewJob(item.type, item.payload, options, this.defaults, this.maxPayloadBytes, now);
    const def = this.registry.get(item.type);
    if (!def) throw new UnknownJobTypeError(item.type, this.registry.types);
    const defaults = defaultsFor(def, this.defaults);
    // The payload is stored as given: the worker runs the schema again and hands its output to
    // the handler, so a transform's output (a Date, a number from a string) never has to be JSON.
    const build = (output: unknown) => buildNewJob(item.type, item.payload, withKeyOf(def, output, options), defaults, this.maxPayloadBytes, now);
    if (!def.schema) return build(item.payload);
    if (syncCaller !== null) return build(validateWithSchemaSync(item.type, def.schema, item.payload, syncCaller));
    return validateWithSchema(item.type, def.schema, item.payload).then(build);
  }
}
