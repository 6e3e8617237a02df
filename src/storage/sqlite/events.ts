/**
 * Job events on SQLite: an operator's change to a job, written by the change's own write
 * transaction (operator.ts, bulk.ts) once it applied, and read back for the job's history.
 */
import { EVENTS_LIMIT } from '../../core/operator.js';
import type { JobEvent, JobEventKind } from '../../core/storage.js';
import type { JobStatus } from '../../core/status.js';
import { toJobEvent } from '../event-mapping.js';
import type { SqliteDb } from './db.js';
import { toSqlId } from './sql.js';

export const EVENT_SQL = {
  // after the change's own writes, so a cancel's closed attempt is the last one
  record: `-- leasehold events.record: one operator change to a job, with the job's last attempt row as the change left it
    INSERT INTO {p}job_events (job_id, at, kind, actor, source, detail)
    VALUES (@jobId, @at, @kind, @actor, @source, json_object('status', @status, 'attempts', @attempts,
      'lastAttemptId', (SELECT CAST(max(id) AS TEXT) FROM {p}job_attempts WHERE job_id = @jobId), 'bulkId', @bulkId))`,
  list: `-- leasehold events.list: a job's events, oldest first, at most @limit
    SELECT id, job_id, at, kind, actor, source, detail FROM {p}job_events WHERE job_id = @jobId ORDER BY id LIMIT @limit`,
  forget: `-- leasehold events.forget: delete the events of jobs about to be deleted (pruned or by a bulk delete), never of a running one
    DELETE FROM {p}job_events WHERE job_id IN (SELECT id FROM {p}jobs WHERE id IN (SELECT value FROM json_each(@ids)) AND status <> 'running')`,
} as const;

/** Who asked for a change, as recorded: null records nothing. */
export interface Recording {
  actor: string;
  source: string | null;
  bulkId: string | null;
}

/** Write the event of a change that applied to job `jobId`; call inside the change's write transaction. */
export function recordEvent(db: SqliteDb, jobId: number, at: number, kind: JobEventKind, before: { status: JobStatus; attempts: number }, r: Recording): void {
  db.stmt(EVENT_SQL.record).run({ jobId, at, kind, actor: r.actor, source: r.source, status: before.status, attempts: before.attempts, bulkId: r.bulkId });
}

export class SqliteEvents {
  constructor(private readonly db: SqliteDb) {}

  async list(p: { jobId: string; limit?: number | undefined }): Promise<JobEvent[]> {
    const jobId = toSqlId(p.jobId);
    const limit = p.limit ?? EVENTS_LIMIT;
    if (jobId === null || limit <= 0) return [];
    const rows = this.db.read(() => this.db.stmt(EVENT_SQL.list).all({ jobId, limit }) as Record<string, unknown>[]);
    return rows.map((r) => toJobEvent(r, (v) => new Date(Number(v))));
  }
}
