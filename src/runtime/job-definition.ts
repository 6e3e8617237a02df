/**
 * Job types: the handler, its payload schema and its policies, registered by name.
 */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { Logger } from 'pino';
import type { LeaseExpiredPolicy, RateLimit, RetryPolicy, TypeFlow } from '../core/index.js';
import { ValidationError, validateName, validateRetryPolicy, validateTypeFlow } from '../core/index.js';
import type { JobRow } from '../core/storage.js';

/**
 * What a handler gets besides its payload: the job as claimed, its attempt number, an abort
 * signal, and the calls that talk back to the worker.
 */
export interface JobContext {
  /** The job as claimed (`attempts` already counts this attempt). */
  readonly job: Readonly<JobRow>;
  /** 1-based number of this attempt. */
  readonly attempt: number;
  /** Fires on timeout, max runtime, lost lease, cancel and shutdown; `signal.reason` (an `AbortReason`) says which. */
  readonly signal: AbortSignal;
  /** Report progress: resets the inactivity timeout and renews the lease now. Throws `LeaseLostError` if the lease is lost. */
  heartbeat(): Promise<void>;
  /**
   * Run `fn` only if no attempt of any job recorded `key` before; a later re-run returns the
   * recorded result instead. The record is fenced by this attempt's lease.
   */
  once<T>(key: string, fn: () => T | Promise<T>): Promise<T>;
  /**
   * Record this attempt's success inside your own transaction (storages with
   * `capabilities.transactionalEnqueue`): the fenced finish runs on `tx`, so your writes and the
   * job's completion commit together, or neither does. Throws `LeaseLostError` when the lease is
   * gone — roll back then. If your transaction rolls back anyway, the lease lapses and the job
   * is retried.
   */
  succeedInTransaction(tx: unknown): Promise<void>;
  /**
   * Report how far the job has got: `value` any JSON (a number, `{ done, total }`, …) and a short
   * note, shown by `leasehold jobs show`, `client.getJob` and the dashboard. Written fenced by the
   * lease at most once per the worker's `progressIntervalMs`, the last report winning, and before
   * the attempt's outcome. Resets the inactivity timeout like `heartbeat`. Throws
   * `ValidationError` (INVALID_PROGRESS) for a value that is not JSON or too large.
   */
  progress(value: unknown, note?: string): void;
  /**
   * A workflow job's parents (the jobs it ran after, all succeeded), in id order, each with its
   * result (undefined when it returned none); [] for a job outside a workflow. A parent deleted
   * meanwhile (an operator's delete; retention keeps a parent while a child has not ended) is
   * still listed, with `pruned: true`, `type` null and no result: never silently left out.
   */
  parents(): Promise<ParentResult[]>;
  /** A child of the worker's logger carrying the job's id, type and attempt. */
  readonly log: Logger;
}

/** A parent of a workflow job, as `ctx.parents()` gives it. */
export interface ParentResult {
  /** the parent's id */
  id: string;
  /** its job type; null when it was pruned */
  type: string | null;
  /** what its handler returned (as stored: parsed JSON), or undefined (always when pruned) */
  result: unknown;
  /** true when the parent is gone (deleted): its type and result can no longer be read */
  pruned?: boolean;
}

/**
 * A job type's code. Return normally for success, throw for a retryable failure, throw
 * `PermanentFailure` or return `fail(reason)` to make the job dead now, return `snooze(ms)` to
 * run it again later without counting an attempt, or `cancel(reason)`.
 *
 * @typeParam P - the payload, as the definition's schema outputs it (or as the handler declares it)
 */
export type JobHandler<P> = (payload: P, ctx: JobContext) => unknown;

/**
 * A job type: its name, handler, payload schema and policies. Make one with {@link defineJob};
 * give the same list to `createClient` and `new Worker`.
 *
 * @typeParam P - the payload the handler receives: the schema's output type
 * @typeParam T - the type's name, as a string literal (what `client.enqueue` checks)
 * @typeParam I - the payload `client.enqueue` takes: the schema's input type (P without a schema)
 */
export interface JobDefinition<P = unknown, T extends string = string, I = P> {
  /** The type's name: 1–128 of `A-Za-z0-9_.:-/`. */
  type: T;
  /** Runs each attempt; see {@link JobHandler} for what its result means. */
  handler: JobHandler<P>;
  /**
   * A [Standard Schema](https://standardschema.dev) (zod, valibot, arktype…) for the payload:
   * checked at enqueue (a `ValidationError`, code `PAYLOAD_SCHEMA`, and nothing written), which
   * stores the payload as given; before the handler runs it is checked again and the handler gets
   * its output (defaults and transforms applied).
   */
  schema?: StandardSchemaV1<I, P>;
  /** Delays between attempts (default: exponential from 1 s, ×2, capped at 1 h, equal jitter). */
  retry?: RetryPolicy;
  /** Attempts before the job is dead (default 5). */
  maxAttempts?: number;
  /** Inactivity timeout: no `ctx.heartbeat()` for this long aborts the attempt (default 5 min). */
  timeoutMs?: number;
  /** Hard bound on one attempt, heartbeats or not (default 1 h). */
  maxRuntimeMs?: number;
  /** The queue its jobs go to (default `default`). */
  queue?: string;
  /** Lower runs first (default 0, from −32768 to 32767). */
  priority?: number;
  /** `retry` (default) puts a job whose worker vanished back to due; `fail` makes it dead, for non-idempotent work. */
  onLeaseExpired?: LeaseExpiredPolicy;
  /** At most this many jobs of this type run at once across the cluster; the claim leaves the rest due. */
  globalConcurrency?: number;
  /** At most this many jobs of this type run at once per concurrency key, across the cluster. */
  keyConcurrency?: number;
  /** The concurrency key of a job from its payload (an enqueue's `concurrencyKey` option wins). */
  concurrencyKey?: (payload: P) => string | null | undefined;
  /** At most `limit` jobs of this type start per `periodMs` (per concurrency key with `perKey`), across the cluster. */
  rateLimit?: RateLimit;
}

/** The limits the claim enforces for a type, or undefined when it has none. */
export function flowOf(def: JobDefinition<unknown>): TypeFlow | undefined {
  if (def.globalConcurrency === undefined && def.keyConcurrency === undefined && def.rateLimit === undefined) return undefined;
  return {
    ...(def.globalConcurrency !== undefined ? { maxRunning: def.globalConcurrency } : {}),
    ...(def.keyConcurrency !== undefined ? { maxRunningPerKey: def.keyConcurrency } : {}),
    ...(def.rateLimit !== undefined ? { rate: def.rateLimit } : {}),
  };
}

/**
 * Define a job type. The payload type comes from `schema` (its input is what enqueue takes, its
 * output what the handler gets) or, without one, from the handler's parameter; the `type` is kept
 * as a literal, so a client made from a list of definitions checks names and payloads at compile
 * time. Throws a `ValidationError` for a bad name or policy.
 *
 * @example
 * ```ts
 * const sendEmail = defineJob({
 *   type: 'send-email',
 *   schema: z.object({ to: z.string().email() }),
 *   handler: async ({ to }, ctx) => { await ctx.once(`email:${ctx.job.id}`, () => mailer.send(to)); },
 * });
 * ```
 */
export function defineJob<P, T extends string = string, I = P>(def: JobDefinition<P, T, I>): JobDefinition<P, T, I> {
  validateName('job type', def.type);
  if (typeof def.handler !== 'function') throw new ValidationError('INVALID_OPTION', `job ${def.type}: handler must be a function`);
  if (def.retry) validateRetryPolicy(def.retry);
  if (def.onLeaseExpired && !['retry', 'fail'].includes(def.onLeaseExpired)) {
    throw new ValidationError('INVALID_OPTION', `job ${def.type}: onLeaseExpired must be 'retry' or 'fail'`);
  }
  const flow = flowOf(def as JobDefinition<unknown>);
  if (flow) validateTypeFlow(def.type, flow);
  if (def.concurrencyKey !== undefined && typeof def.concurrencyKey !== 'function') throw new ValidationError('INVALID_OPTION', `job ${def.type}: concurrencyKey must be a function of the payload`);
  return def;
}

/** A job definition of any payload and name: what lists of definitions hold. */
// why `any`: one list holds definitions of different payload types, and P is invariant
// (the handler consumes it, the schema produces it).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyJobDefinition = JobDefinition<any, string, any>;

/** Job definitions by type; built once from a list, then read-only. */
export class JobRegistry {
  readonly #byType = new Map<string, JobDefinition<unknown>>();

  constructor(defs: readonly AnyJobDefinition[] = []) {
    for (const d of defs) {
      const def = defineJob(d as JobDefinition<unknown>);
      if (this.#byType.has(def.type)) throw new ValidationError('INVALID_OPTION', `job type ${def.type} defined twice`);
      this.#byType.set(def.type, def);
    }
  }

  get(type: string): JobDefinition<unknown> | undefined {
    return this.#byType.get(type);
  }

  get types(): string[] {
    return [...this.#byType.keys()];
  }

  get size(): number {
    return this.#byType.size;
  }

  /** Each limited type's limits, for the claim; undefined when no type is limited. */
  get flow(): Record<string, TypeFlow> | undefined {
    const out: Record<string, TypeFlow> = {};
    for (const [type, def] of this.#byType) {
      const f = flowOf(def);
      if (f) out[type] = f;
    }
    return Object.keys(out).length > 0 ? out : undefined;
  }
}

/** Validate `payload` against a Standard Schema; returns the (possibly transformed) value. */
export async function validateWithSchema(type: string, schema: StandardSchemaV1, payload: unknown): Promise<unknown> {
  return schemaOutput(type, await schema['~standard'].validate(payload));
}

/**
 * As {@link validateWithSchema}, for a caller that cannot wait (a synchronous transaction).
 *
 * @throws `ValidationError` (`INVALID_OPTION`) when the schema validates asynchronously
 */
export function validateWithSchemaSync(type: string, schema: StandardSchemaV1, payload: unknown, caller: string): unknown {
  const result = schema['~standard'].validate(payload);
  if (typeof (result as { then?: unknown }).then === 'function') {
    // nobody waits for it: its rejection must not surface as an unhandled one
    Promise.resolve(result).catch(() => undefined);
    throw new ValidationError('INVALID_OPTION', `the schema of ${type} validates asynchronously, so ${caller} cannot check its payload: use an enqueue that can be awaited, or a schema without async refinements`);
  }
  return schemaOutput(type, result as StandardSchemaV1.Result<unknown>);
}

function schemaOutput(type: string, result: StandardSchemaV1.Result<unknown>): unknown {
  if (result.issues) {
    const detail = result.issues
      .slice(0, 5)
      .map((i) => `${(i.path ?? []).map((p) => (typeof p === 'object' ? String(p.key) : String(p))).join('.') || '(root)'}: ${i.message}`)
      .join('; ');
    throw new ValidationError('PAYLOAD_SCHEMA', `payload for ${type} does not match its schema: ${detail}`);
  }
  return result.value;
}
