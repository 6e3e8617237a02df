/**
 * Plumbing between mysql2/promise and the adapter: one query helper whose options make results
 * independent of how the pool (ours or the caller's) was configured, the pool we create, and
 * the row mappers. Transactions: mysql-tx.ts.
 */
import mysql from 'mysql2/promise';
import { ValidationError } from '../../core/errors.js';
import type { EffectRow, WorkerRow } from '../../core/storage.js';
import { rowMappers } from '../row-mapping.js';

/** What the adapter needs of a connection or pool: mysql2/promise's `query`. */
export interface Queryable {
  query(options: { sql: string; values?: unknown }, values?: unknown): Promise<[unknown, unknown]>;
}

/** A pooled connection we can hand back (or throw away when it broke). */
export interface Leased extends Queryable {
  release(): void;
  destroy(): void;
}

export interface PoolLike extends Queryable {
  getConnection(): Promise<Leased>;
}

export interface ResultHeader {
  affectedRows: number;
  insertId: number | string;
}

export type Row = Record<string, unknown>;

/**
 * Per-query options, whatever the connection's config says: DATETIME comes back as its text
 * (we read it as UTC ourselves), BIGINT as a decimal string.
 */
const QUERY_OPTS = { dateStrings: true, supportBigNumbers: true, bigNumberStrings: true, timezone: 'Z' } as const;

export async function run<T = Row[]>(c: Queryable, sql: string, values?: readonly unknown[]): Promise<T> {
  const [res] = await c.query({ sql, values, ...QUERY_OPTS } as { sql: string; values?: unknown });
  return res as T;
}

export async function exec(c: Queryable, sql: string, values?: readonly unknown[]): Promise<ResultHeader> {
  return run<ResultHeader>(c, sql, values);
}

/** The pool the adapter creates and owns from a URI. */
export function createPool(uri: string, size: number, idleTxMs: number): mysql.Pool {
  const pool = mysql.createPool({
    uri,
    connectionLimit: size,
    // DATETIME holds UTC: mysql2 reads and writes it as UTC whatever the session time zone says
    timezone: 'Z',
    dateStrings: false,
    supportBigNumbers: true,
    bigNumberStrings: true,
    charset: 'utf8mb4',
    enableKeepAlive: true,
    // no call-site stack captured on every query (mysql2's `trace`): about 13 µs a statement
    // here, and our errors name the operation that failed themselves (toStorageError)
    trace: false,
    // a transaction's statements travel together (BEGIN with the first, COMMIT with the last):
    // fewer round trips. Values are still escaped by mysql2, never spliced in by us.
    multipleStatements: true,
  });
  // MariaDB only (MySQL has no such limit and skips the /*M! … */ part): a process frozen
  // inside one of our transactions must not hold its row locks, and so block a rescue, for ever
  const idle = `SET @leasehold_pool = 1 /*M!100300 , SESSION idle_transaction_timeout = ${Math.ceil(idleTxMs / 1000)} */`;
  pool.pool.on('connection', (c) => void c.query(idle));
  return pool;
}

/** The caller's own transaction handle: a mysql2/promise (Pool)Connection, or a callback one. */
export function callerTx(tx: unknown): Queryable {
  const t = tx as { query?: unknown; promise?: unknown } | null;
  if (t && typeof t === 'object') {
    if (typeof t.promise === 'function') return (t.promise as () => Queryable).call(t);
    if (typeof t.query === 'function') return t as Queryable;
  }
  throw new ValidationError('INVALID_OPTION', 'mysql storage: `tx` must be a mysql2 connection inside your transaction');
}

// ---- values in and out ---------------------------------------------------------------------

/** A JS Date as a DATETIME(6) literal in UTC (no dependence on the connection's timezone). */
export function utcLiteral(d: Date): string {
  return d.toISOString().slice(0, 23).replace('T', ' ');
}

/** A DATETIME(6) text ("2024-05-01 12:00:00.123456", UTC) as a Date (millisecond precision). */
export function parseUtc(v: unknown): Date {
  if (v instanceof Date) return v;
  const s = String(v);
  return new Date(`${s.slice(0, 10)}T${s.slice(11, 23) || '00:00:00'}Z`);
}

export function parseUtcOrNull(v: unknown): Date | null {
  return v === null || v === undefined ? null : parseUtc(v);
}

/** Milliseconds as whole microseconds for `INTERVAL ? MICROSECOND`. */
export function micros(ms: number): number {
  return Math.max(0, Math.round(ms * 1000));
}

/** A decimal id string as a BigInt parameter; null when it is not one. */
export function idParam(id: string): bigint | null {
  return /^\d{1,20}$/.test(id) ? BigInt(id) : null;
}

/** JSON in a text column: NULL stands for `undefined`. */
export function toJsonText(v: unknown): string | null {
  return v === undefined ? null : JSON.stringify(v);
}

export function fromJsonText(v: unknown): unknown {
  return v === null || v === undefined ? undefined : JSON.parse(String(v));
}

const str = (v: unknown): string => String(v);
const num = (v: unknown): number => Number(v);

/** DATETIME(6) comes back as UTC text, the payload as JSON text */
export const { toJobRow, toAttemptRow } = rowMappers({ date: parseUtc, payload: (v) => JSON.parse(String(v)) });

export function toEffectRow(r: Row): EffectRow {
  return {
    key: str(r.effect_key),
    jobId: str(r.job_id),
    state: str(r.state) as 'pending' | 'done',
    result: fromJsonText(r.result),
    createdAt: parseUtc(r.created_at),
    doneAt: parseUtcOrNull(r.done_at),
  };
}

export function toWorkerRow(r: Row): WorkerRow {
  return {
    id: str(r.id),
    host: str(r.host),
    pid: num(r.pid),
    version: str(r.version),
    queues: (fromJsonText(r.queues) as string[] | undefined) ?? null,
    types: JSON.parse(String(r.types)) as string[],
    startedAt: parseUtc(r.started_at),
    heartbeatAt: parseUtc(r.heartbeat_at),
  };
}
