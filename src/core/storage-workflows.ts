/**
 * The workflow calls of the Storage contract: what jobs hand on besides their status. Types
 * only; ./storage.ts re-exports everything here.
 *
 * Semantics every adapter must meet (test/conformance/results.ts pins them):
 * - leases.finish with `result` (a succeeded item) stores that JSON text as the job's result in
 *   the same fenced write; a finish that does not land stores nothing. jobs.get and jobs.list
 *   return it as `result` (parsed), absent when none.
 * - workflows.progress: one guarded write WHERE id AND lease_token match AND status = 'running':
 *   progress = value, progress_note = note, progress_at = now; true when it landed, false when
 *   the lease is gone (nothing written). The last progress stays on the job after it ends.
 */

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

/** Results, progress and (later) the graph of jobs that wait for each other. */
export interface WorkflowStore {
  /** Record a running attempt's progress, fenced by its lease; false when the lease is gone. */
  progress(params: ProgressParams): Promise<boolean>;
}
