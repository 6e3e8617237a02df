/**
 * The data model every adapter's baseline migration creates (DESIGN.md): table names without
 * the adapter's prefix or schema, and their columns. Each adapter's migrations test reads its
 * database's catalogue after migrating and compares it with this, so a migration and the code
 * that reads the tables cannot drift apart on one database only.
 */
export const SCHEMA_VERSION = 1;

export const EXPECTED_TABLES: Readonly<Record<string, readonly string[]>> = {
  jobs: [
    'id', 'queue', 'type', 'payload', 'status', 'priority', 'run_at', 'attempts', 'max_attempts', 'idempotency_key',
    'locked_by', 'lease_token', 'locked_until', 'heartbeat_at', 'started_at', 'finished_at', 'last_error_code',
    'last_error', 'timeout_ms', 'max_runtime_ms', 'created_at', 'updated_at', 'schedule_name', 'slot_at',
    'trace_context', 'concurrency_key', 'unique_key', 'result', 'progress', 'progress_note', 'progress_at',
    'pending_parents', 'dependents', 'parent_policy', 'batch_id',
  ],
  job_attempts: [
    'id', 'job_id', 'attempt', 'worker_id', 'lease_token', 'started_at', 'finished_at', 'duration_ms', 'outcome',
    'error_code', 'error_message', 'error_stack', 'retry_delay_ms', 'wait_ms',
  ],
  effects: ['key', 'job_id', 'lease_token', 'state', 'result', 'created_at', 'done_at'],
  workers: ['id', 'host', 'pid', 'version', 'queues', 'types', 'started_at', 'heartbeat_at'],
  schedules: [
    'name', 'cron', 'every_ms', 'timezone', 'type', 'payload', 'queue', 'priority', 'max_attempts', 'misfire',
    'misfire_window_ms', 'misfire_max', 'enabled', 'source', 'next_run_at', 'last_run_at', 'last_slot_at',
    'created_at', 'updated_at',
  ],
  locks: ['name', 'slot', 'owner', 'token', 'fence', 'acquired_at', 'expires_at', 'slots'],
  alert_states: ['rule', 'state', 'episode', 'since', 'value', 'updated_at'],
  queue_states: ['queue', 'paused', 'paused_at', 'updated_at'],
  flow_buckets: ['name', 'tokens', 'refilled_at'],
  job_events: ['id', 'job_id', 'at', 'kind', 'actor', 'source', 'detail'],
  attempt_rollups: ['slot_at', 'kind', 'label', 'n'],
  job_dependencies: ['parent_id', 'child_id'],
  batches: [
    'id', 'state', 'on_success_only', 'total', 'pending', 'succeeded', 'dead', 'cancelled', 'callback', 'callback_type', 'created_at',
    'finished_at',
  ],
  migrations: ['version', 'name', 'applied_at'],
};

/** Compare a catalogue read from the database ({ table: columns }) with the expected model plus a database's own extra tables. */
export function schemaDiff(actual: Readonly<Record<string, readonly string[]>>, extra: Readonly<Record<string, readonly string[]>> = {}): string[] {
  const want = { ...EXPECTED_TABLES, ...extra };
  const out: string[] = [];
  for (const [t, cols] of Object.entries(want)) {
    const have = actual[t];
    if (!have) {
      out.push(`missing table ${t}`);
      continue;
    }
    for (const c of cols) if (!have.includes(c)) out.push(`${t}: missing column ${c}`);
    for (const c of have) if (!cols.includes(c)) out.push(`${t}: unexpected column ${c}`);
  }
  for (const t of Object.keys(actual)) if (!(t in want)) out.push(`unexpected table ${t}`);
  return out;
}
