/**
 * Job types: the handler, its payload schema and its policies, registered by name.
 */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { Logger } from 'pino';
import type { LeaseExpiredPolicy, RateLimit, RetryPolicy, TypeFlow } from '../core/index.js';
import { ValidationError, validateName, validateRetryPolicy, validateTypeFlow } from '../core/index.js';
import type { JobRow } from '../core/storage.js';

export interface JobContext {
  /** the job as claimed (attempts already counts this attempt) */
  readonly job: Readonly<JobRow>;
  /** 1-based number of this attempt */
  readonly attempt: number;
  /** fires on timeout, max runtime, lost lease, cancel and shutdown; `signal.reason` says which */
  readonly signal: AbortSignal;
  /** Report progress: resets the inactivity timeout and renews the lease now. Throws if the lease is lost. */
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
  readonly log: Logger;
}

export type JobHandler<P> = (payload: P, ctx: JobContext) => unknown;

export interface JobDefinition<P = unknown> {
  type: string;
  handler: JobHandler<P>;
  /** validated at enqueue (when the client knows the type) and again before the handler runs */
  schema?: StandardSchemaV1<unknown, P>;
  retry?: RetryPolicy;
  maxAttempts?: number;
  timeoutMs?: number;
  maxRuntimeMs?: number;
  queue?: string;
  priority?: number;
  /** 'retry' (default) puts a job whose worker vanished back to due; 'fail' makes it dead, for non-idempotent work */
  onLeaseExpired?: LeaseExpiredPolicy;
  /** at most this many jobs of this type run at once across the cluster; the claim leaves the rest due */
  globalConcurrency?: number;
  /** at most this many jobs of this type run at once per concurrency key, across the cluster */
  keyConcurrency?: number;
  /** the concurrency key of a job from its payload (an enqueue's `concurrencyKey` option wins) */
  concurrencyKey?: (payload: P) => string | null | undefined;
  /** at most `limit` jobs of this type start per `periodMs` (per concurrency key with `perKey`), across the cluster */
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

export function defineJob<P>(def: JobDefinition<P>): JobDefinition<P> {
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

// why `any`: one list holds definitions of different payload types, and P is invariant
// (the handler consumes it, the schema produces it).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyJobDefinition = JobDefinition<any>;

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
  const result = await schema['~standard'].validate(payload);
  if (result.issues) {
    const detail = result.issues
      .slice(0, 5)
      .map((i) => `${(i.path ?? []).map((p) => (typeof p === 'object' ? String(p.key) : String(p))).join('.') || '(root)'}: ${i.message}`)
      .join('; ');
    throw new ValidationError('PAYLOAD_SCHEMA', `payload for ${type} does not match its schema: ${detail}`);
  }
  return result.value;
}
