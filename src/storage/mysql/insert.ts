/**
 * Enqueues on MySQL/MariaDB, batches without unique keys (those are unique-keys.ts's).
 *
 * One locking read (it sees rows committed after our snapshot) finds the jobs holding the
 * batch's idempotency keys; those items, and items repeating an earlier item's key, return that
 * row. The rest goes into INSERTs of up to MAX_ROWS rows / ~MAX_BYTES. A key committed by
 * another transaction between the read and the INSERT fails it with ER_DUP_ENTRY (InnoDB rolls
 * back that statement only): the keys are read again, at last one item at a time. MariaDB
 * returns what the database chose (RETURNING); MySQL's multi-row INSERT gets consecutive ids in
 * steps of @@auto_increment_increment, read back and checked item by item.
 */
import type { InsertResult, NewJob } from '../../core/storage.js';
import { alikeButPayload } from '../row-mapping.js';
import { type Queryable, exec, isDuplicate, run } from './db.js';
import { JOB_COLS, type MysqlFeatures, NOW, type Row, type Tables, micros, toJobRow, utcLiteral } from './sql.js';

const MAX_ROWS = 1000;
/** Far below every server's max_allowed_packet (4 MiB+). */
const MAX_BYTES = 1 << 20;
/** Look-up-and-insert rounds over the whole batch before a key race is settled item by item. */
const KEY_ROUNDS = 2;

const INSERT_INTO = (jobs: string): string => `INSERT INTO ${jobs} (queue, type, payload, status, priority, run_at, attempts, max_attempts,
        idempotency_key, timeout_ms, max_runtime_ms, created_at, updated_at, trace_context, concurrency_key, unique_key)`;
/** One row's placeholders; run_at = the explicit time, else now + delay (µs). */
const INSERT_ROW = `(?, ?, ?, 'queued', ?, COALESCE(CAST(? AS DATETIME(6)), ${NOW} + INTERVAL ? MICROSECOND), 0, ?, ?, ?, ?, ${NOW}, ${NOW}, ?, ?, ?)`;

export function insertSql(t: Tables) {
  return {
    insertJobs: (n: number): string => `-- leasehold insertJobs: insert ${n} queued job(s)
      ${INSERT_INTO(t.jobs)} VALUES ${Array<string>(n).fill(INSERT_ROW).join(', ')}`,
    // for one job the JSON_TABLE form costs the server more than it saves
    insertOneJob: `-- leasehold insertJobs: insert one queued job
      ${INSERT_INTO(t.jobs)} VALUES ${INSERT_ROW} RETURNING id, run_at, created_at`,
    // the server reads one JSON string faster than the rows as VALUES; wide text columns make a
    // too-long value fail on the table's column instead of being cut short by JSON_TABLE
    insertJobsJson: `-- leasehold insertJobs: insert queued jobs from a JSON array, in its order
      ${INSERT_INTO(t.jobs)}
      SELECT q, t, p, 'queued', pr, COALESCE(ra, ${NOW} + INTERVAL rd MICROSECOND), 0, ma, k, tm, mr, ${NOW}, ${NOW}, tc, ck, uk
      FROM JSON_TABLE(?, '$[*]' COLUMNS (n FOR ORDINALITY, q TEXT PATH '$[0]', t TEXT PATH '$[1]', p LONGTEXT PATH '$[2]',
        pr INT PATH '$[3]', ra DATETIME(6) PATH '$[4]', rd BIGINT PATH '$[5]', ma INT PATH '$[6]', k TEXT PATH '$[7]',
        tm BIGINT PATH '$[8]', mr BIGINT PATH '$[9]', tc TEXT PATH '$[10]', ck TEXT PATH '$[11]', uk TEXT PATH '$[12]')) AS v
      ORDER BY n RETURNING id, run_at, created_at`,
    // a one-column JSON_TABLE costs the server less per row than the ten-column one
    insertRunJson: `-- leasehold insertJobs: insert a run of alike queued jobs (shared values once, payloads from a JSON array, in its order)
      ${INSERT_INTO(t.jobs)}
      SELECT ?, ?, p, 'queued', ?, COALESCE(CAST(? AS DATETIME(6)), ${NOW} + INTERVAL ? MICROSECOND), 0, ?, NULL, ?, ?, ${NOW}, ${NOW}, ?, ?, NULL
      FROM JSON_TABLE(?, '$[*]' COLUMNS (n FOR ORDINALITY, p LONGTEXT PATH '$')) AS v
      ORDER BY n RETURNING id, run_at, created_at`,
    jobsByKeysLocked: `-- leasehold insertJobs: the jobs already holding these idempotency keys
      SELECT ${JOB_COLS} FROM ${t.jobs} WHERE idempotency_key IN (?) LOCK IN SHARE MODE`,
    jobsByIds: `-- leasehold insertJobs: read back the rows just inserted
      SELECT ${JOB_COLS} FROM ${t.jobs} WHERE id IN (?)`,
  };
}

export type InsertSql = ReturnType<typeof insertSql>;

/** A batch ready to insert: payloads serialised once, their sizes known. */
export interface PreparedInsert {
  jobs: readonly NewJob[];
  payloads: string[];
  sizes: number[];
  keyed: boolean;
  /** some job carries a unique key: the batch is unique-keys.ts's */
  unique: boolean;
}

export function prepareInsert(jobs: readonly NewJob[]): PreparedInsert {
  const payloads = jobs.map((j) => JSON.stringify(j.payload ?? null));
  // escaping can double a payload; the rest of a row is ~200 bytes
  const sizes = jobs.map((j, i) => 2 * payloads[i]!.length + (j.idempotencyKey?.length ?? 0) + (j.concurrencyKey?.length ?? 0) + j.queue.length + j.type.length + 200);
  return { jobs, payloads, sizes, keyed: jobs.some((j) => j.idempotencyKey !== null), unique: jobs.some((j) => j.unique) };
}

/** One INSERT … RETURNING with nothing to look up: atomic without a transaction. */
export function isSingleStatement(p: PreparedInsert, f: MysqlFeatures): boolean {
  return f.returning && !p.keyed && p.jobs.length <= MAX_ROWS && p.sizes.reduce((a, b) => a + b, 0) <= MAX_BYTES;
}

/** Insert a prepared batch on `c` (in a transaction, or alone when isSingleStatement); results in input order. */
export async function insertJobsOn(c: Queryable, sql: InsertSql, p: PreparedInsert, f: MysqlFeatures): Promise<InsertResult[]> {
  const rows: (Row | undefined)[] = new Array(p.jobs.length);
  const created: boolean[] = new Array(p.jobs.length).fill(false);
  /** key → the batch item that inserts it (when no committed job holds it) */
  const holder = new Map<string, number>();
  for (let round = 1; ; round++) {
    try {
      await insertRound(c, sql, p, f, rows, created, holder);
      break;
    } catch (e) {
      if (!isDuplicate(e) || !p.keyed) throw e;
      if (round < KEY_ROUNDS) continue;
      await insertOneByOne(c, sql, p, f, rows, created);
      break;
    }
  }
  return p.jobs.map((j, i) => {
    // an item repeating an earlier item's key gets that item's row (a copy)
    const row = rows[i] ?? (j.idempotencyKey === null ? undefined : rows[holder.get(j.idempotencyKey) ?? -1]);
    if (!row) throw new Error(`mysql insertJobs: no row for item ${i}`);
    return { job: toJobRow(row), created: created[i]!, outcome: created[i] ? 'created' : 'existing' };
  });
}

/** The last resort: each item alone, and on a duplicate the row the database itself matches to the key (a PAD SPACE collation matches 'k' and 'k '). */
async function insertOneByOne(c: Queryable, sql: InsertSql, p: PreparedInsert, f: MysqlFeatures, rows: (Row | undefined)[], created: boolean[]): Promise<void> {
  for (let i = 0; i < p.jobs.length; i++) {
    if (rows[i]) continue;
    const key = p.jobs[i]!.idempotencyKey;
    try {
      rows[i] = (await insertChunk(c, sql, p, f, [i]))[0];
      created[i] = true;
    } catch (e) {
      if (!isDuplicate(e) || key === null) throw e;
      rows[i] = (await run(c, sql.jobsByKeysLocked, [[key]]))[0];
      if (!rows[i]) throw e;
    }
  }
}

/** One look-up-and-insert pass over the items not resolved yet; a duplicate key aborts it (ER_DUP_ENTRY). */
async function insertRound(c: Queryable, sql: InsertSql, p: PreparedInsert, f: MysqlFeatures, rows: (Row | undefined)[], created: boolean[], holder: Map<string, number>): Promise<void> {
  const pending = p.jobs.flatMap((_, i) => (rows[i] ? [] : [i]));
  const existing = new Map<string, Row>();
  const keys = [...new Set(pending.map((i) => p.jobs[i]!.idempotencyKey).filter((k): k is string => k !== null))];
  if (keys.length > 0) for (const r of await run(c, sql.jobsByKeysLocked, [keys])) existing.set(String(r.idempotency_key), r);
  const toInsert: number[] = [];
  for (const i of pending) {
    const key = p.jobs[i]!.idempotencyKey;
    if (key !== null) {
      rows[i] = existing.get(key);
      if (rows[i]) continue;
      const first = holder.get(key);
      if (first !== undefined && first !== i) continue; // resolved from the holder's row at the end
      holder.set(key, i);
    }
    toInsert.push(i);
  }
  for (let from = 0; from < toInsert.length; ) {
    let to = from;
    let bytes = 0;
    while (to < toInsert.length && to - from < MAX_ROWS && (to === from || bytes + p.sizes[toInsert[to]!]! <= MAX_BYTES)) bytes += p.sizes[toInsert[to++]!]!;
    const chunk = toInsert.slice(from, to);
    const got = await insertChunk(c, sql, p, f, chunk);
    chunk.forEach((i, k) => {
      rows[i] = got[k];
      created[i] = true;
    });
    from = to;
  }
}

/** One multi-row INSERT; the stored rows in chunk order. */
export async function insertChunk(c: Queryable, sql: InsertSql, p: PreparedInsert, f: MysqlFeatures, chunk: readonly number[]): Promise<Row[]> {
  const rowValues = (i: number): unknown[] => {
    const j = p.jobs[i]!;
    return [
      j.queue, j.type, p.payloads[i], j.priority, j.runAt ? utcLiteral(j.runAt) : null, micros(j.runAfterMs), j.maxAttempts, j.idempotencyKey,
      j.timeoutMs, j.maxRuntimeMs, j.traceContext ?? null, j.concurrencyKey ?? null, j.unique?.key ?? null,
    ];
  };
  if (!f.returning) return insertAndReadBack(c, sql, p, f, chunk, rowValues);
  const first = p.jobs[chunk[0]!]!;
  const run1 = chunk.length > 1 && chunk.every((i) => p.jobs[i]!.idempotencyKey === null && alikeButPayload(first, p.jobs[i]!));
  const got =
    chunk.length === 1 ? await run(c, sql.insertOneJob, rowValues(chunk[0]!))
    : run1 ? await run(c, sql.insertRunJson, [
        first.queue, first.type, first.priority, first.runAt ? utcLiteral(first.runAt) : null, micros(first.runAfterMs),
        first.maxAttempts, first.timeoutMs, first.maxRuntimeMs, first.traceContext ?? null, first.concurrencyKey ?? null, JSON.stringify(chunk.map((i) => p.payloads[i])),
      ])
    : await run(c, sql.insertJobsJson, [JSON.stringify(chunk.map(rowValues))]);
  if (got.length !== chunk.length) throw new Error(`mysql insertJobs: ${got.length} rows came back for ${chunk.length} inserted`);
  return got.map((r, k) => insertedRow(r, p.jobs[chunk[k]!]!, p.payloads[chunk[k]!]!));
}

/** MySQL: a multi-row INSERT … VALUES ("simple insert": consecutive ids), its rows read back and checked to be ours, in our order. */
async function insertAndReadBack(c: Queryable, sql: InsertSql, p: PreparedInsert, f: MysqlFeatures, chunk: readonly number[], rowValues: (i: number) => unknown[]): Promise<Row[]> {
  const res = await exec(c, sql.insertJobs(chunk.length), chunk.flatMap(rowValues));
  const ids = chunk.map((_, k) => BigInt(String(res.insertId)) + BigInt(k) * f.idStep);
  const byId = new Map((await run(c, sql.jobsByIds, [ids])).map((r) => [String(r.id), r]));
  const rows = ids.map((id) => byId.get(String(id)));
  const isRowOf = (r: Row | undefined, j: NewJob, payload: string): boolean =>
    r !== undefined && r.type === j.type && r.queue === j.queue && (r.idempotency_key ?? null) === j.idempotencyKey && r.payload === payload;
  // anything else would hand out the wrong job
  if (!chunk.every((i, k) => isRowOf(rows[k], p.jobs[i]!, p.payloads[i]!))) {
    throw new Error('mysql insertJobs: the inserted rows could not be matched to the batch (non-consecutive auto-increment ids?)');
  }
  return rows as Row[];
}

/** The stored row of a job just inserted, from what RETURNING chose and what the row was given (sending back the columns we sent would cost the server and the driver for nothing). */
function insertedRow(r: Row, j: NewJob, payload: string): Row {
  return {
    id: r.id, queue: j.queue, type: j.type, payload, status: 'queued', priority: j.priority, run_at: r.run_at, attempts: 0,
    max_attempts: j.maxAttempts, idempotency_key: j.idempotencyKey, locked_by: null, lease_token: null, locked_until: null,
    heartbeat_at: null, started_at: null, finished_at: null, last_error_code: null, last_error: null, timeout_ms: j.timeoutMs,
    max_runtime_ms: j.maxRuntimeMs, created_at: r.created_at, updated_at: r.created_at, schedule_name: null, slot_at: null, trace_context: j.traceContext ?? null,
    concurrency_key: j.concurrencyKey ?? null, unique_key: j.unique?.key ?? null,
  };
}
