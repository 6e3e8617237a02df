/**
 * Types only: what a list of job definitions allows a client to enqueue and schedule. A client
 * made from a list knows each type's name and payload, so a wrong name or payload shape is a
 * compile error; a client made without one (a CLI enqueuing for workers elsewhere) takes any.
 */
import type { EnqueueOptions, ScheduleInput } from '../core/index.js';
import type { InsertOutcome, JobRow } from '../core/storage.js';
import type { AnyJobDefinition, JobDefinition } from './job-definition.js';

/** A list of job definitions, as given to `createClient` and `new Worker`. */
export type JobList = readonly AnyJobDefinition[];

/** The type names of a list of definitions (`string` when the list is not known at compile time). */
export type JobTypeName<J extends JobList> = J[number]['type'];

/** The definition of type `T` in the list `J`. */
export type JobOf<J extends JobList, T extends string> = Extract<
  J[number],
  {
    /** the type to pick */
    type: T;
  }
>;

/**
 * The payload `client.enqueue` takes for type `T`: the input type of its definition's schema, or
 * its handler's payload type when it has no schema; `unknown` when the list is not known.
 */
export type JobInput<J extends JobList, T extends string> =
  string extends JobTypeName<J> ? unknown : JobOf<J, T> extends JobDefinition<infer _P, infer _T, infer I> ? I : never;

/** An enqueue's options, and the transaction to enqueue in. */
export type EnqueueItemOptions = EnqueueOptions & {
  /**
   * Your own open transaction (a `pg` client, a `mysql2` connection, or an integration's handle),
   * where the storage's `capabilities.transactionalEnqueue` is true: the job exists once you commit.
   */
  tx?: unknown;
};

/** One job of an `enqueueMany` call: a type of the list, a payload of that type, its options. */
export type EnqueueItem<J extends JobList = JobList> = {
  [T in JobTypeName<J>]: {
    /** a type name of the list */
    type: T;
    /** what that type takes: its schema's input */
    payload: JobInput<J, T>;
    /** when and where it runs; see `EnqueueOptions` */
    options?: EnqueueItemOptions;
  };
}[JobTypeName<J>];

/**
 * A schedule declaration for one of the list's types: `type` names a definition of the list and
 * `payload` is one that type takes, required unless the type takes the default `{}` (see
 * `ScheduleInput` for the timing fields).
 */
export type ScheduleFor<J extends JobList = JobList> = {
  [T in JobTypeName<J>]: Omit<ScheduleInput, 'type' | 'payload'> & {
    /** the job type each run enqueues */
    type: T;
  } & (Record<never, never> extends JobInput<J, T>
      ? {
          /** the payload of each run (default `{}`) */
          payload?: JobInput<J, T>;
        }
      : {
          /** the payload of each run */
          payload: JobInput<J, T>;
        });
}[JobTypeName<J>];

/** Due jobs of one type and queue that no live worker has a handler for (`client.unhandledJobs()`). */
export interface UnhandledJobs {
  /** the job type */
  type: string;
  /** its queue */
  queue: string;
  /** how many of its jobs are due (at least this many when `capped`) */
  due: number;
  /** true when the read of due jobs stopped at its limit: `due` is a lower bound, and a type whose jobs were not read is missing */
  capped: boolean;
}

/** A job as an enqueue wrote or found it. */
export type EnqueuedJob = JobRow & {
  /** false when an idempotency or unique key matched an existing job, which is returned instead */
  created: boolean;
  /** what the enqueue did: a new job, an existing one returned, or a waiting one replaced (debounce) */
  outcome: InsertOutcome;
};
