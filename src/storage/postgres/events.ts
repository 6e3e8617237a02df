/**
 * Job events on PostgreSQL: an operator's change to a job, recorded by a statement of its own
 * after the change, in the change's transaction. Its own statement, so its snapshot is taken
 * after the change locked the job: the job's last attempt row it names includes an attempt a
 * finish committed while the change waited for the lock, and the one a cancel just wrote.
 */
import { EVENTS_LIMIT } from '../../core/operator.js';
import type { JobEvent, JobEventKind } from '../../core/storage.js';
import type { JobStatus } from '../../core/status.js';
import { toJobEvent } from '../event-mapping.js';
import { SqlAggregate } from '../aggregates.js';
import { type Db, type Queryable, query } from './db.js';
import { NOW, date, validId } from './sql.js';

export function eventsSql(s: string) {
  return {
    /** $1 id. The change's first statement: the job as it is before the change, locked until the change commits. */
    lockJob: `-- leasehold lockJob: the job an operator's change is about, locked until the change commits
SELECT status, attempts FROM ${s}.jobs WHERE id = $1::bigint FOR UPDATE`,

    /** $1 ids, $2 statuses before, $3 attempts before, $4 kind, $5 actor, $6 source, $7 bulk id */
    record: `-- leasehold recordEvents: one event per changed job, naming the job's last attempt row as the change left it
INSERT INTO ${s}.job_events (job_id, at, kind, actor, source, detail)
SELECT e.id, ${NOW}, $4::text, $5::text, $6::text,
       json_build_object('status', e.was, 'attempts', e.was_attempts,
                         'lastAttemptId', (SELECT max(a.id)::text FROM ${s}.job_attempts a WHERE a.job_id = e.id), 'bulkId', $7::text)
FROM unnest($1::bigint[], $2::text[], $3::int[]) AS e(id, was, was_attempts)`,

    /** $1 job id, $2 limit */
    list: `-- leasehold listEvents: a job's events, oldest first
SELECT id, job_id, at, kind, actor, source, detail FROM ${s}.job_events WHERE job_id = $1::bigint ORDER BY id LIMIT $2::int`,
  };
}

export type EventsSql = ReturnType<typeof eventsSql>;

/** A job a change applied to, as it was before. */
export interface Changed {
  id: string;
  was: JobStatus;
  wasAttempts: number;
}

/** Who asked for a change, as recorded. */
export interface Recording {
  actor: string;
  source: string | null;
  bulkId: string | null;
}

/** Record `kind` for every changed job; on the change's transaction client, after the change. */
export async function recordEvents(c: Queryable, sql: EventsSql, kind: JobEventKind, changed: readonly Changed[], r: Recording): Promise<void> {
  if (changed.length === 0) return;
  await query(c, 'recordEvents', sql.record, [changed.map((x) => x.id), changed.map((x) => x.was), changed.map((x) => x.wasAttempts), kind, r.actor, r.source, r.bulkId]);
}

export class PostgresEvents extends SqlAggregate<Db, EventsSql> {
  constructor(db: Db) {
    super(db, eventsSql(db.q));
  }

  async list(p: { jobId: string; limit?: number | undefined }): Promise<JobEvent[]> {
    const id = validId(p.jobId);
    const limit = p.limit ?? EVENTS_LIMIT;
    if (id === null || limit <= 0) return [];
    return (await this.db.run('listEvents', this.sql.list, [id, limit])).map((r) => toJobEvent(r, date));
  }
}
