/**
 * How the adapter talks to the server: one statement (autocommit on the pool, or on the
 * caller's transaction client), or a short transaction of our own on one pooled connection.
 * Driver errors leave here classified: conditions worth retrying (a dropped or refused
 * connection, a server shutting down, serialization failures and deadlocks) become
 * `TransientStorageError`; a value PostgreSQL cannot hold becomes a `ValidationError`; anything
 * else a `LeaseholdError` with code 'STORAGE'. The driver's error is always kept as `cause`.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { LeaseholdError, TransientStorageError, ValidationError } from '../../core/errors.js';
import { NOTIFY_CHANNEL } from './listener.js';
import { quoteSchema } from './sql.js';

export type Row = Record<string, unknown>;

export type Queryable = Pick<pg.ClientBase, 'query'>;

/**
 * A statement run as a named prepared statement: each connection parses and plans it once,
 * then only binds and executes. Only for statements with explicit column lists: a `*` result
 * would change type when a migration adds a column, and the server refuses such a cached plan.
 * Without a name (behind a transaction pooler, see `Db.prepare`) it is parsed on every run.
 */
export interface Prepared {
  name?: string;
  text: string;
  /** rows as arrays of column values (cheaper to build and read than objects keyed by name) */
  rowMode?: 'array';
}

export function prepared(text: string, rowMode?: 'array'): Prepared {
  return { name: `leasehold_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`, text, ...(rowMode ? { rowMode } : {}) };
}

/** The pool, the schema, and the wake-up every write that makes jobs due sends. */
export class Db {
  /** the schema name, quoted for SQL */
  readonly q: string;
  /** NOTIFY channel and payload (the schema) for the wake-up of jobs due now */
  readonly notify: [string, string];

  constructor(
    readonly pool: pg.Pool,
    readonly schema: string,
    /** false behind a transaction pooler: the next statement may reach a server connection that never saw the PREPARE */
    readonly namedStatements = true,
  ) {
    this.q = quoteSchema(schema);
    this.notify = [NOTIFY_CHANNEL, schema];
  }

  /** A hot statement: named and prepared once per connection, or unnamed behind a transaction pooler. */
  prepare(text: string, rowMode?: 'array'): Prepared {
    return this.namedStatements ? prepared(text, rowMode) : { text, ...(rowMode ? { rowMode } : {}) };
  }

  /** Run one statement on the pool, or on `on` (the caller's transaction client). */
  run(what: string, text: string | Prepared, params: unknown[] = [], on?: Queryable): Promise<Row[]> {
    return query(on ?? this.pool, what, text, params);
  }

  /** `begin` may carry SET LOCAL statements after BEGIN, sent in the same round trip. */
  transaction<T>(what: string, fn: (c: pg.PoolClient) => Promise<T>, begin = 'BEGIN'): Promise<T> {
    return transaction(this.pool, what, fn, begin);
  }
}

/** The caller's transaction handle, checked to be a connected client (not a pool). */
export function txClient(tx: unknown): Queryable | undefined {
  if (tx === undefined || tx === null) return undefined;
  const c = tx as { query?: unknown; totalCount?: unknown };
  if (typeof c.query !== 'function' || 'totalCount' in c) {
    throw new ValidationError('INVALID_OPTION', 'tx must be a pg.Client or pg.PoolClient inside your open transaction (not a pool)');
  }
  return tx as Queryable;
}

/** Run one statement and return its rows. */
export async function query(on: Queryable, what: string, text: string | Prepared, params: unknown[] = []): Promise<Row[]> {
  try {
    const res = typeof text === 'string' ? await on.query(text, params) : await on.query({ name: text.name, text: text.text, values: params, ...(text.rowMode ? { rowMode: text.rowMode } : {}) });
    return res.rows as Row[];
  } catch (e) {
    throw classifyPgError(e, what);
  }
}

/** Run `fn` in BEGIN … COMMIT on one pooled connection; a broken connection is discarded. */
export async function transaction<T>(pool: pg.Pool, what: string, fn: (c: pg.PoolClient) => Promise<T>, begin = 'BEGIN'): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (e) {
    throw classifyPgError(e, what);
  }
  let broken = false;
  // a connection that dies between two statements of ours emits 'error' on the client: heard
  // here (the next statement then fails and the client is discarded), never an unhandled crash
  const lost = () => {
    broken = true;
  };
  client.on('error', lost);
  try {
    await client.query(begin);
    const out = await fn(client);
    await client.query('COMMIT');
    return out;
  } catch (e) {
    broken ||= isTransientPgError(e);
    await client.query('ROLLBACK').catch(() => {
      broken = true;
    });
    throw classifyPgError(e, what);
  } finally {
    client.off('error', lost);
    client.release(broken);
  }
}

/** SQLSTATEs that say "try again": the statement did not land, or was rolled back whole. */
const TRANSIENT_SQLSTATES = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '55P03', // lock_not_available (lock_timeout)
  '57P01', // admin_shutdown (pg_terminate_backend, fast shutdown)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, recovering)
  '57P05', // idle_session_timeout
  '53300', // too_many_connections
  '53400', // configuration_limit_exceeded
  '25P03', // idle_in_transaction_session_timeout
]);

/** SQLSTATE classes that are transient as a whole: connection_exception. */
const TRANSIENT_CLASSES = ['08'];

const TRANSIENT_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** Messages node-postgres uses for connection trouble that carries no code. */
const TRANSIENT_MESSAGES = [
  /connection terminated/i,
  /terminating connection/i,
  /timeout exceeded when trying to connect/i,
  /connection (?:is )?(?:closed|ended)/i,
  /client has encountered a connection error/i,
  /cannot use a pool after calling end/i,
  /query read timeout/i,
];

/** SQLSTATEs raised for JSON values PostgreSQL cannot hold. */
const PAYLOAD_SQLSTATES = new Set(['22P05', '22P02', '22025']);

function sqlState(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** True when the error says the operation may succeed if simply tried again. */
export function isTransientPgError(e: unknown): boolean {
  if (e instanceof TransientStorageError) return true;
  if (e instanceof LeaseholdError) return false;
  const code = sqlState(e);
  if (code !== undefined) {
    if (TRANSIENT_SQLSTATES.has(code) || TRANSIENT_NODE_CODES.has(code)) return true;
    if (/^[0-9A-Z]{5}$/.test(code) && TRANSIENT_CLASSES.includes(code.slice(0, 2))) return true;
  }
  const message = e instanceof Error ? e.message : String(e);
  return TRANSIENT_MESSAGES.some((re) => re.test(message));
}

/** Turn a driver error into the library's typed errors; leasehold errors pass through. */
export function classifyPgError(e: unknown, what: string): Error {
  if (e instanceof LeaseholdError) return e;
  const message = e instanceof Error ? e.message : String(e);
  const code = sqlState(e);
  if (isTransientPgError(e)) {
    return new TransientStorageError(`postgres: ${what} failed (${code ?? 'connection'}): ${message}`, { cause: e });
  }
  if (code === '22021') {
    return new ValidationError('INVALID_OPTION', `postgres cannot store this text (NUL or invalid byte): ${message}`, { cause: e });
  }
  if (code !== undefined && PAYLOAD_SQLSTATES.has(code) && /json|unicode|escape/i.test(message)) {
    return new ValidationError('INVALID_PAYLOAD', `postgres cannot store this value as jsonb: ${message}`, { cause: e });
  }
  return new LeaseholdError('STORAGE', `postgres: ${what} failed${code ? ` (${code})` : ''}: ${message}`, { cause: e });
}
