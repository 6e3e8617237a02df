/**
 * Row → contract mapping shared by the SQL adapters. The columns are the same in every dialect;
 * only how a timestamp and a JSON payload come back from the driver differs, so each adapter
 * passes those two decoders and gets the mappers.
 */
import type { AttemptOutcome, JobStatus } from '../core/status.js';
import type { AttemptRow, BatchRow, BatchState, JobRow, NewJob } from '../core/storage.js';

export interface RowDecoders {
  /** a non-null timestamp column as the driver returns it */
  date(v: unknown): Date;
  /** the payload column as the driver returns it */
  payload(v: unknown): unknown;
}

const strOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export function rowMappers(d: RowDecoders) {
  const dateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : d.date(v));

  function toJobRow(row: object): JobRow {
    const r = row as Record<string, unknown>;
    return {
      id: String(r.id),
      queue: String(r.queue),
      type: String(r.type),
      payload: d.payload(r.payload),
      status: r.status as JobStatus,
      priority: Number(r.priority),
      runAt: d.date(r.run_at),
      attempts: Number(r.attempts),
      maxAttempts: Number(r.max_attempts),
      idempotencyKey: strOrNull(r.idempotency_key),
      lockedBy: strOrNull(r.locked_by),
      leaseToken: strOrNull(r.lease_token),
      lockedUntil: dateOrNull(r.locked_until),
      heartbeatAt: dateOrNull(r.heartbeat_at),
      startedAt: dateOrNull(r.started_at),
      finishedAt: dateOrNull(r.finished_at),
      lastErrorCode: strOrNull(r.last_error_code),
      lastError: strOrNull(r.last_error),
      timeoutMs: Number(r.timeout_ms),
      maxRuntimeMs: Number(r.max_runtime_ms),
      createdAt: d.date(r.created_at),
      updatedAt: d.date(r.updated_at),
      // only jobs a schedule enqueued carry their slot
      ...(r.schedule_name != null && r.slot_at != null ? { scheduleName: String(r.schedule_name), slotAt: d.date(r.slot_at) } : {}),
      ...(r.trace_context != null ? { traceContext: String(r.trace_context) } : {}),
      ...(r.concurrency_key != null ? { concurrencyKey: String(r.concurrency_key) } : {}),
      ...(r.unique_key != null ? { uniqueKey: String(r.unique_key) } : {}),
      // JSON null reads as no result, as SQL NULL does
      ...(r.result != null && d.payload(r.result) !== null ? { result: d.payload(r.result) as NonNullable<unknown> } : {}),
      ...(r.progress != null && r.progress_at != null ? { progress: { value: d.payload(r.progress), note: strOrNull(r.progress_note), at: d.date(r.progress_at) } } : {}),
      ...(r.pending_parents != null ? { pendingParents: Number(r.pending_parents) } : {}),
      ...(r.batch_id != null ? { batchId: String(r.batch_id) } : {}),
    };
  }

  function toAttemptRow(row: object): AttemptRow {
    const r = row as Record<string, unknown>;
    return {
      id: String(r.id),
      jobId: String(r.job_id),
      attempt: Number(r.attempt),
      workerId: String(r.worker_id),
      leaseToken: String(r.lease_token),
      startedAt: d.date(r.started_at),
      finishedAt: dateOrNull(r.finished_at),
      durationMs: numOrNull(r.duration_ms),
      outcome: r.outcome as AttemptOutcome,
      errorCode: strOrNull(r.error_code),
      errorMessage: strOrNull(r.error_message),
      errorStack: strOrNull(r.error_stack),
      retryDelayMs: numOrNull(r.retry_delay_ms),
      waitMs: Number(r.wait_ms),
    };
  }

  function toBatchRow(row: object): BatchRow {
    const r = row as Record<string, unknown>;
    return {
      id: String(r.id), state: r.state as BatchState, onSuccessOnly: r.on_success_only === true || Number(r.on_success_only) === 1,
      total: Number(r.total), pending: Number(r.pending), succeeded: Number(r.succeeded), dead: Number(r.dead), cancelled: Number(r.cancelled),
      callbackType: String(r.callback_type), createdAt: d.date(r.created_at), finishedAt: dateOrNull(r.finished_at),
    };
  }

  return { toJobRow, toAttemptRow, toBatchRow };
}

/**
 * The row a fresh insert of `j` holds, built without reading it back: what the database chose
 * (id, run_at, created_at) plus what the row was given. Sending back columns we just sent
 * cost the server and the parser a large share of a bulk insert. Validation happened before
 * (names, integer ranges), so the columns hold exactly those values; `payload` must be the
 * stored JSON as a read returns it (parsed from the text the adapter wrote).
 */
export function insertedJobRow(j: NewJob, db: { id: string; runAt: Date; createdAt: Date; payload: unknown }): JobRow {
  return {
    id: db.id, queue: j.queue, type: j.type, payload: db.payload, status: 'queued', priority: j.priority,
    runAt: db.runAt, attempts: 0, maxAttempts: j.maxAttempts, idempotencyKey: j.idempotencyKey,
    lockedBy: null, leaseToken: null, lockedUntil: null, heartbeatAt: null, startedAt: null, finishedAt: null,
    lastErrorCode: null, lastError: null, timeoutMs: j.timeoutMs, maxRuntimeMs: j.maxRuntimeMs,
    // each Date its own object, as rows read back are
    createdAt: db.createdAt, updatedAt: new Date(db.createdAt.getTime()),
    ...(j.traceContext !== undefined ? { traceContext: j.traceContext } : {}),
    ...(j.concurrencyKey != null ? { concurrencyKey: j.concurrencyKey } : {}),
    ...(j.unique ? { uniqueKey: j.unique.key } : {}),
  };
}

/**
 * Whether two new jobs differ at most in their payload, so that one statement can insert both
 * with the shared values (trace context included) sent once (the adapters' "run of alike jobs").
 * Idempotency and unique keys are left to the caller: a run is only ever made of jobs without them.
 */
export function alikeButPayload(a: NewJob, b: NewJob): boolean {
  return (
    a.type === b.type && a.queue === b.queue && a.priority === b.priority && a.runAfterMs === b.runAfterMs &&
    (a.runAt?.getTime() ?? null) === (b.runAt?.getTime() ?? null) && a.maxAttempts === b.maxAttempts &&
    a.timeoutMs === b.timeoutMs && a.maxRuntimeMs === b.maxRuntimeMs && a.traceContext === b.traceContext &&
    (a.concurrencyKey ?? null) === (b.concurrencyKey ?? null)
  );
}
