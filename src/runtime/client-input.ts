/**
 * The client's checks and defaults that need no storage (ids, a shared `tx`, a job type's own
 * policies and concurrency key, a schedule's type and payload), and its answer to an insert.
 */
import type { EnqueueOptions, JobDefaults, ScheduleInput } from '../core/index.js';
import { UnknownJobTypeError, ValidationError } from '../core/index.js';
import type { InsertResult, JobRow } from '../core/storage.js';
import type { JobDefinition, JobRegistry } from './job-definition.js';
import { validateWithSchema } from './job-definition.js';
import type { EnqueuedJob } from './job-types.js';

export const NO_OPTIONS: EnqueueOptions = Object.freeze({});

/** Set membership equality (as the `new Set(txs).size` check this replaces): NaN equals NaN. */
export function sameValueZero(a: unknown, b: unknown): boolean {
  return a === b || (a !== a && b !== b);
}

/** A job id as storage keeps it: a positive decimal integer of at most 19 digits. */
export function checkId(id: string): string {
  if (typeof id !== 'string' || !/^[1-9][0-9]{0,18}$/.test(id)) throw new ValidationError('INVALID_OPTION', `not a job id: ${JSON.stringify(id)}`);
  return id;
}

/** A job type's own policies over the client's defaults (read per item: a definition is the user's object). */
export function defaultsFor(def: JobDefinition<unknown>, defaults: JobDefaults): JobDefaults {
  return {
    queue: def.queue ?? defaults.queue,
    priority: def.priority ?? defaults.priority,
    maxAttempts: def.maxAttempts ?? defaults.maxAttempts,
    timeoutMs: def.timeoutMs ?? defaults.timeoutMs,
    maxRuntimeMs: def.maxRuntimeMs ?? defaults.maxRuntimeMs,
  };
}

/** The options with the definition's concurrency key filled in, unless the enqueue gave one. */
export function withKeyOf(def: JobDefinition<unknown>, payload: unknown, options: EnqueueOptions & { tx?: unknown }): EnqueueOptions & { tx?: unknown } {
  if (options.concurrencyKey !== undefined || !def.concurrencyKey) return options;
  const key = def.concurrencyKey(payload);
  return key === null || key === undefined ? options : { ...options, concurrencyKey: key };
}

/** A schedule's type known and its payload accepted by the type's schema; stored as given, as an enqueue's. */
export async function checkSchedule(registry: JobRegistry | null, input: ScheduleInput): Promise<ScheduleInput> {
  if (!registry) return input;
  const def = registry.get(input.type);
  if (!def) throw new UnknownJobTypeError(input.type, registry.types);
  if (def.schema) await validateWithSchema(input.type, def.schema, input.payload ?? {});
  return input;
}

/** Each insert result as the job it answers with; `woken` when local workers have a job to look at. */
export function enqueueAnswers(results: readonly InsertResult[]): { jobs: EnqueuedJob[]; woken: boolean } {
  const jobs: EnqueuedJob[] = [];
  // Adapters hand out fresh rows (the conformance suite checks it), so each is marked in
  // place rather than copied (a spread of ~22 fields cost more per job than the insert).
  // Only a batch that met an existing row can hold one object twice: then copy repeats.
  const seen = results.every((r) => r.created) ? null : new Set<JobRow>();
  // a debounce that replaced a waiting job moved its run time: wake local workers as for a new one
  let woken = results.some((r) => r.outcome === 'replaced');
  for (const r of results) {
    woken ||= r.created;
    let job = r.job as EnqueuedJob;
    if (seen !== null) {
      if (seen.has(r.job)) job = { ...r.job } as EnqueuedJob;
      else seen.add(r.job);
    }
    job.created = r.created;
    job.outcome = r.outcome;
    jobs.push(job);
  }
  return { jobs, woken };
}
