/**
 * insertJobs on MySQL/MariaDB: multi-row INSERTs, idempotency keys resolved for the whole batch.
 *
 * - Keys: one locking read finds the jobs already holding any of the batch's keys (a locking
 *   read sees rows committed after our snapshot); those items return that row, created=false.
 *   A later item repeating an earlier item's key returns the earlier item's row. Everything
 *   else goes into INSERTs of up to MAX_ROWS rows / ~MAX_BYTES of SQL each.
 * - A concurrent transaction may commit one of our keys between the read and the INSERT (no
 *   gap locks under READ COMMITTED): the INSERT fails as a whole with ER_DUP_ENTRY (InnoDB rolls
 *   back just that statement), and we read the keys again and insert what is left (in the
 *   end one item at a time).
 * - MariaDB: one job is a one-row INSERT … VALUES … RETURNING; more are INSERT … SELECT from a
 *   JSON_TABLE of the rows … RETURNING (in insert order), both returning only
 *   what the database chose; a run of alike jobs sends the shared values once and a JSON array of
 *   the payloads alone. MySQL has no RETURNING: a multi-row INSERT … VALUES ("simple
 *   insert") gets consecutive ids from LAST_INSERT_ID() in steps of @@auto_increment_increment,
 *   which we read back and check item by item.
 */
import type { InsertResult, NewJob } from '../../core/storage.js';
import { alikeButPayload } from '../row-mapping.js';
import type { Queryable, Row } from './mysql-db.js';
import { exec, micros, run, toJobRow, utcLiteral } from './mysql-db.js';
import type { MysqlSql } from './mysql-sql.js';

const ER_DUP_ENTRY = 1062;
/** Rows per INSERT statement. */
const MAX_ROWS = 1000;
/** Rough SQL bytes per INSERT statement: far below every server's max_allowed_packet (4 MiB+). */
const MAX_BYTES = 1 << 20;
/** Look-up-and-insert rounds over the whole batch before a key race is settled item by item. */
const KEY_ROUNDS = 2;

/** What the adapter knows about the server it talks to. */
export interface MysqlFeatures {
  /** INSERT … RETURNING: MariaDB 10.5+ */
  returning: boolean;
  /** @@auto_increment_increment: the id step within one multi-row INSERT */
  idStep: bigint;
}

export function featuresOf(row: Row | undefined): MysqlFeatures {
  return { returning: /mariadb/i.test(String(row?.version ?? '')), idStep: BigInt(String(row?.step ?? 1)) };
}

/** A batch ready to insert: payloads serialised once, their sizes known. */
export interface PreparedInsert {
  jobs: readonly NewJob[];
  payloads: string[];
  sizes: number[];
  keyed: boolean;
}

export function prepareInsert(jobs: readonly NewJob[]): PreparedInsert {
  const payloads = jobs.map((j) => JSON.stringify(j.payload ?? null));
  // escaping can double a payload; the rest of a row is ~200 bytes
  const sizes = jobs.map((j, i) => 2 * payloads[i]!.length + (j.idempotencyKey?.length ?? 0) + j.queue.length + j.type.length + 200);
  return { jobs, payloads, sizes, keyed: jobs.some((j) => j.idempotencyKey !== null) };
}

/** True when the batch is one INSERT … RETURNING with nothing to look up: atomic without a transaction. */
export function isSingleStatement(p: PreparedInsert, f: MysqlFeatures): boolean {
  return f.returning && !p.keyed && p.jobs.length <= MAX_ROWS && p.sizes.reduce((a, b) => a + b, 0) <= MAX_BYTES;
}

function isDuplicate(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { errno?: unknown }).errno === ER_DUP_ENTRY;
}

/** Insert a prepared batch on `c` (in a transaction, or alone when isSingleStatement); results in input order. */
export async function insertJobsOn(c: Queryable, sql: MysqlSql, p: PreparedInsert, f: MysqlFeatures): Promise<InsertResult[]> {
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
    return { job: toJobRow(row), created: created[i]! };
  });
}

/**
 * The last resort when batches keep meeting duplicate keys: each item alone, and on a duplicate
 * the row the database itself matches to the key (under a PAD SPACE collation, MySQL before
 * 8.0.17, 'k' and 'k ' are the same key, which a JS Map cannot know).
 */
async function insertOneByOne(c: Queryable, sql: MysqlSql, p: PreparedInsert, f: MysqlFeatures, rows: (Row | undefined)[], created: boolean[]): Promise<void> {
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
async function insertRound(
  c: Queryable,
  sql: MysqlSql,
  p: PreparedInsert,
  f: MysqlFeatures,
  rows: (Row | undefined)[],
  created: boolean[],
  holder: Map<string, number>,
): Promise<void> {
  const pending: number[] = [];
  for (let i = 0; i < p.jobs.length; i++) if (!rows[i]) pending.push(i);
  const existing = new Map<string, Row>();
  const keys = [...new Set(pending.map((i) => p.jobs[i]!.idempotencyKey).filter((k): k is string => k !== null))];
  if (keys.length > 0) for (const r of await run(c, sql.jobsByKeysLocked, [keys])) existing.set(String(r.idempotency_key), r);
  const toInsert: number[] = [];
  for (const i of pending) {
    const key = p.jobs[i]!.idempotencyKey;
    if (key !== null) {
      const row = existing.get(key);
      if (row) {
        rows[i] = row;
        continue;
      }
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
async function insertChunk(c: Queryable, sql: MysqlSql, p: PreparedInsert, f: MysqlFeatures, chunk: readonly number[]): Promise<Row[]> {
  const rowValues = (i: number): unknown[] => {
    const j = p.jobs[i]!;
    return [j.queue, j.type, p.payloads[i], j.priority, j.runAt ? utcLiteral(j.runAt) : null, micros(j.runAfterMs), j.maxAttempts, j.idempotencyKey, j.timeoutMs, j.maxRuntimeMs];
  };
  if (f.returning) {
    const first = p.jobs[chunk[0]!]!;
    if (chunk.length === 1) {
      const [r] = await run(c, sql.insertOneJob, rowValues(chunk[0]!));
      if (!r) throw new Error('mysql insertJobs: no row came back for the job inserted');
      return [insertedRow(r, p.jobs[chunk[0]!]!, p.payloads[chunk[0]!]!)];
    }
    const run1 = chunk.length > 1 && chunk.every((i) => p.jobs[i]!.idempotencyKey === null && alikeButPayload(first, p.jobs[i]!));
    const got = run1
      ? await run(c, sql.insertRunJson, [
          first.queue, first.type, first.priority, first.runAt ? utcLiteral(first.runAt) : null, micros(first.runAfterMs),
          first.maxAttempts, first.timeoutMs, first.maxRuntimeMs, JSON.stringify(chunk.map((i) => p.payloads[i])),
        ])
      : await run(c, sql.insertJobsJson, [JSON.stringify(chunk.map(rowValues))]);
    if (got.length !== chunk.length) throw new Error(`mysql insertJobs: ${got.length} rows came back for ${chunk.length} inserted`);
    return got.map((r, k) => insertedRow(r, p.jobs[chunk[k]!]!, p.payloads[chunk[k]!]!));
  }
  const values = chunk.flatMap(rowValues);
  const res = await exec(c, sql.insertJobs(chunk.length), values);
  const first = BigInt(String(res.insertId));
  const ids = chunk.map((_, k) => first + BigInt(k) * f.idStep);
  const byId = new Map<string, Row>();
  for (const r of await run(c, sql.jobsByIds, [ids])) byId.set(String(r.id), r);
  const rows = ids.map((id) => byId.get(String(id)));
  // the rows must be ours, in our order: anything else would hand out the wrong job
  if (!chunk.every((i, k) => rows[k] !== undefined && isRowOf(rows[k], p.jobs[i]!, p.payloads[i]!))) {
    throw new Error('mysql insertJobs: the inserted rows could not be matched to the batch (non-consecutive auto-increment ids?)');
  }
  return rows as Row[];
}

/**
 * The stored row of a job just inserted, from what RETURNING chose (id, run_at, created_at) and
 * what the row was given: sending back columns we sent costs the server and the parser a
 * quarter of the INSERT's time. Validation happened before (names, integer ranges), so the
 * columns hold exactly those values; the payload column holds exactly our JSON text.
 */
function insertedRow(r: Row, j: NewJob, payload: string): Row {
  return {
    id: r.id, queue: j.queue, type: j.type, payload, status: 'queued', priority: j.priority, run_at: r.run_at, attempts: 0,
    max_attempts: j.maxAttempts, idempotency_key: j.idempotencyKey, locked_by: null, lease_token: null, locked_until: null,
    heartbeat_at: null, started_at: null, finished_at: null, last_error_code: null, last_error: null, timeout_ms: j.timeoutMs,
    max_runtime_ms: j.maxRuntimeMs, created_at: r.created_at, updated_at: r.created_at, schedule_name: null, slot_at: null,
  };
}

function isRowOf(r: Row, j: NewJob, payload: string): boolean {
  return r.type === j.type && r.queue === j.queue && (r.idempotency_key ?? null) === j.idempotencyKey && r.payload === payload;
}
