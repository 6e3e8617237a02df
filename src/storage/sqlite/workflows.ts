/** Results and progress on SQLite: the job row's workflow columns and the fenced progress write. */
import type { ProgressParams, WorkflowStore } from '../../core/storage.js';
import type { SqliteDb } from './db.js';
import { toSqlId } from './sql.js';

/** The jobs table's workflow columns, in the baseline migration's CREATE TABLE (after unique_key); JSON as TEXT. */
export const WORKFLOW_JOB_COLUMNS = `,
  result          TEXT,
  progress        TEXT,
  progress_note   TEXT,
  progress_at     INTEGER`;

const WORKFLOW_SQL = {
  progress: `-- leasehold workflows.progress: record a running attempt's progress, only under its lease (id + token + running)
    UPDATE {p}jobs SET progress = @value, progress_note = @note, progress_at = @now, updated_at = @now
    WHERE id = @id AND lease_token = @token AND status = 'running'`,
} as const;

export class SqliteWorkflows implements WorkflowStore {
  constructor(private readonly db: SqliteDb) {}

  async progress(p: ProgressParams): Promise<boolean> {
    const id = toSqlId(p.id);
    if (id === null) return false;
    const now = this.db.now();
    const row = { id, token: p.leaseToken, value: p.value, note: p.note, now };
    return this.db.write(() => this.db.stmt(WORKFLOW_SQL.progress).run(row).changes) > 0;
  }
}
