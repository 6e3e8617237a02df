/**
 * The workflow calls of the Storage contract: what jobs hand on besides their status. Types
 * only; ./storage.ts re-exports everything here.
 *
 * Semantics every adapter must meet (test/conformance/results.ts, workflows.ts and batches.ts pin them):
 * - leases.finish with `result` (a succeeded item) stores that JSON text as the job's result in
 *   the same fenced write; a finish that does not land stores nothing. jobs.get and jobs.list
 *   return it as `result` (parsed), absent when none.
 * - workflows.progress: one guarded write WHERE id AND lease_token match AND status = 'running':
 *   progress = value, progress_note = note, progress_at = now; true when it landed, false when
 *   the lease is gone (nothing written). The last progress stays on the job after it ends.
 * - workflows.insertFlow: one transaction. Each job as jobs.insert would make it, but a job with
 *   parents is `waiting` with pending_parents = its parents not succeeded, never claimed; each
 *   parent records how many children it has (dependents) and the edges are stored. Rows in input
 *   order. Stored parents (storedParents) are locked first (FOR UPDATE in id order; SQLite's write
 *   lock) and read as committed: succeeded counts as done (a job left with none pending is
 *   `queued`, pending_parents 0); not ended is waited for; dead or cancelled under 'cancel' writes
 *   the job and its descendants in the call `cancelled` (finished_at now, PARENT_FAILED, counted
 *   as ended by their batch), under 'hold' leaves them waiting (core/workflow-graph.ts startFlow).
 *   An id naming no job: ValidationError, nothing written. A finish of a stored parent that waited
 *   for that lock settles the new children (PostgreSQL: settle_children reads after the lock).
 * - leases.finish, in the same transaction as the item it lands: a job with dependents that
 *   becomes `succeeded` takes one off each waiting child's pending_parents; a child at 0 becomes
 *   `queued` with run_at = max(run_at, now). One that becomes `dead` or `cancelled` cancels every
 *   waiting descendant reached through children of policy 'cancel' (finished_at now, last error
 *   PARENT_FAILED); 'hold' leaves them waiting for an operator. Children are locked in id order.
 * - Batches: workflows.createBatch stores an open batch and its callback job's spec. insertFlow
 *   with `batchId` inserts members (batch_id set) and adds them to the batch's total and pending
 *   in the same transaction, only while it is open (else it inserts nothing and returns []).
 *   leases.finish, in the same transaction: a member that becomes succeeded, dead or cancelled
 *   (itself, or as a waiting descendant the finish cancels) takes one off pending and adds to
 *   that count (batch rows locked in id order). A closed batch
 *   (workflows.closeBatch) whose pending reaches 0 becomes done and, unless onSuccessOnly with a
 *   member not succeeded, enqueues its callback once: the spec's payload object plus
 *   `batch: { id, total, succeeded, dead, cancelled }`, idempotency key `leasehold:batch:<id>`.
 *   closeBatch of a batch with nothing pending does the same at once.
 * - workflows.graph: the workflow a job belongs to (the jobs reached from it through edges either
 *   way), at most `limit`, breadth first from it (capped: more were reachable; core/workflow-reads.ts),
 *   in id order, and the edges between them; a job without edges is a workflow of one, an unknown id none.
 * - workflows.listBatches: batches newest first, below `beforeId`; workflows.batchMembers: a
 *   batch's members in id order, above `afterId`; both at most `limit`, read through indexes.
 * - Retention: jobs.prune and diagnostics.prunable leave out a job while a job depending on it (an
 *   edge from it) has not ended (not succeeded, dead or cancelled), probed per job through the
 *   keys; prune deletes the edges of the jobs it deletes as children (a child keeps naming a
 *   deleted parent; dependencies lists it), and then each done batch the deleted jobs were members
 *   or the callback of that has no member and no callback job left (after the prune committed).
 */
import type { JobRow, NewJob } from './storage-jobs.js';
import type { JobStatus } from './status.js';

/** One progress report of a running attempt (`workflows.progress`). */
export interface ProgressParams {
  /** the job */
  id: string;
  /** the attempt's fencing token */
  leaseToken: string;
  /** the value, as JSON text (core/results.ts encodeProgress checked it) */
  value: string;
  /** a short note for people, or null */
  note: string | null;
}

/** What a workflow's waiting jobs do when a job they depend on ends dead or cancelled. */
export type ParentPolicy = 'cancel' | 'hold';

/** One job of a workflow insert: a new job (no idempotency or unique key) and the jobs of the same call it waits for. */
export interface FlowJob extends NewJob {
  /** indexes into the call's `jobs` of the jobs it waits for, each lower than its own */
  parents: readonly number[];
  /** ids of jobs already stored it waits for (distinct) */
  storedParents?: readonly string[] | undefined;
}

/** A workflow to insert (`workflows.insertFlow`), parents before their children. */
export interface FlowInsert {
  /** the jobs, each after the jobs it waits for (core/workflow-graph.ts planFlow gives the order) */
  jobs: readonly FlowJob[];
  /** what its waiting jobs do when a parent ends dead or cancelled */
  onParentFailure: ParentPolicy;
  /** add every job to this open batch */
  batchId?: string | undefined;
}

/** Results, progress and the jobs that wait for each other. */
export interface WorkflowStore {
  /** Record a running attempt's progress, fenced by its lease; false when the lease is gone. */
  progress(params: ProgressParams): Promise<boolean>;
  /** Insert a workflow in one transaction; the rows in input order ([] when `batchId` names no open batch). */
  insertFlow(params: FlowInsert): Promise<JobRow[]>;
  /** A new open batch. */
  createBatch(params: NewBatch): Promise<BatchRow>;
  /** No more members: the batch completes once nothing is pending (at once when nothing is). Null: no such batch. */
  closeBatch(params: { batchId: string }): Promise<BatchRow | null>;
  /** One batch, or null. */
  getBatch(params: { batchId: string }): Promise<BatchRow | null>;
  /** The jobs a job waits for and those waiting for it (a workflow's edges), each in id order, at most `limit` of each. */
  dependencies(params: { jobId: string; limit: number }): Promise<JobDependencies>;
}

/** The bounded reads of workflows and batches an operator's pages make (`storage.workflows` has them beside {@link WorkflowStore}). */
export interface WorkflowReads {
  /** The workflow a job belongs to: at most `limit` jobs, those nearest it, and the edges between them. */
  graph(params: { jobId: string; limit: number }): Promise<WorkflowGraph>;
  /** Batches newest first, below `beforeId` when given, at most `limit`. */
  listBatches(params: { beforeId?: string | undefined; limit: number }): Promise<BatchRow[]>;
  /** A batch's members in id order, above `afterId` when given, at most `limit`. */
  batchMembers(params: { batchId: string; afterId?: string | undefined; limit: number }): Promise<WorkflowNode[]>;
}

/** A job as a workflow's graph draws it. */
export interface WorkflowNode {
  /** the job's id */
  id: string;
  /** its type */
  type: string;
  /** its status */
  status: JobStatus;
}

/** The part of a workflow `workflows.graph` read. */
export interface WorkflowGraph {
  /** the jobs in id order: those nearest the one asked for when capped */
  jobs: WorkflowNode[];
  /** parent and child ids of the edges between those jobs, in parent then child id order */
  edges: [parent: string, child: string][];
  /** true when the workflow has more jobs than were read */
  capped: boolean;
}

/** A job's edges in its workflow, by job id. */
export interface JobDependencies {
  /** the jobs it runs after */
  parents: string[];
  /** the jobs that run after it */
  children: string[];
}

/** A batch to create: the callback it enqueues when its last member ends. */
export interface NewBatch {
  /** the callback job, as an enqueue builds it; its payload is a JSON object (the counts are added as `batch`) */
  callback: NewJob;
  /** true: the callback is enqueued only when every member succeeded */
  onSuccessOnly: boolean;
}

/** Where a batch is: taking members (`open`), waiting for its last ones (`closed`), or `done`. */
export type BatchState = 'open' | 'closed' | 'done';

/** A batch as stored. */
export interface BatchRow {
  /** decimal string of an increasing integer */
  id: string;
  /** open, closed or done */
  state: BatchState;
  /** the callback waits for every member to succeed */
  onSuccessOnly: boolean;
  /** members added */
  total: number;
  /** members not ended yet */
  pending: number;
  /** members that ended succeeded */
  succeeded: number;
  /** members that ended dead */
  dead: number;
  /** members that ended cancelled */
  cancelled: number;
  /** the callback job's type */
  callbackType: string;
  /** when it was created */
  createdAt: Date;
  /** when it became done, or null */
  finishedAt: Date | null;
}
