/**
 * What a MySQL/MariaDB error means for leasehold, and the retry loop built on it.
 *
 * - `lock`: deadlock (errno 1213, the server rolled the transaction back), lock wait timeout
 *   (1205, the statement rolled back; we roll the rest back ourselves), or InnoDB's deadlock on
 *   the table's auto-increment lock, which MariaDB reports as 1467 "Failed to read
 *   auto-increment value" after rolling the transaction back (MDEV-33593; seen when two
 *   processes insert the same idempotency keys at once). Nothing of ours
 *   survived, so the whole operation may run again: retried with jittered backoff.
 * - `connection`: the connection broke (network, KILL CONNECTION, server restart). Safe to
 *   retry only when nothing could have committed: a read, an idempotent single statement, or a
 *   transaction that had not sent COMMIT yet.
 * - `other`: a real error (syntax, constraint, data); thrown as it is.
 * Whatever cannot be retried (or runs out of retries) surfaces as `TransientStorageError`.
 */
import { TransientStorageError } from '../../core/errors.js';

export type MysqlErrorKind = 'lock' | 'connection' | 'other';

/** errno values: deadlock, lock wait timeout, deadlock on the auto-increment lock. */
const LOCK_ERRNOS = new Set([1213, 1205, 1467]);

/**
 * errno values meaning the connection (or the server) went away: too many connections (1040),
 * server shutdown (1053), query interrupted by KILL (1317), connection killed (MariaDB 1927),
 * client disconnected for inactivity (MySQL 4031), gone away / lost (2006, 2013).
 */
const CONNECTION_ERRNOS = new Set([1040, 1053, 1317, 1927, 4031, 2006, 2013]);

/** Node / mysql2 error codes meaning the socket is gone or never came up. */
const CONNECTION_CODES = new Set([
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
  'PROTOCOL_ENQUEUE_AFTER_QUIT',
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
  'ER_CONNECTION_KILLED',
  'ER_CLIENT_INTERACTION_TIMEOUT',
]);

interface MaybeMysqlError {
  errno?: unknown;
  code?: unknown;
  fatal?: unknown;
}

export function classifyMysqlError(e: unknown): MysqlErrorKind {
  if (typeof e !== 'object' || e === null) return 'other';
  const { errno, code, fatal } = e as MaybeMysqlError;
  if (typeof errno === 'number' && LOCK_ERRNOS.has(errno)) return 'lock';
  if (code === 'ER_LOCK_DEADLOCK' || code === 'ER_LOCK_WAIT_TIMEOUT') return 'lock';
  if (typeof errno === 'number' && CONNECTION_ERRNOS.has(errno)) return 'connection';
  if (typeof code === 'string' && CONNECTION_CODES.has(code)) return 'connection';
  if (fatal === true) return 'connection';
  // mysql2 reports a query on an already-closed connection with no code, only this message
  if (e instanceof Error && /connection is in closed state/i.test(e.message)) return 'connection';
  return 'other';
}

/** Lock and connection errors become `TransientStorageError`; anything else is returned as it is. */
export function toStorageError(e: unknown, what: string): unknown {
  const kind = classifyMysqlError(e);
  if (kind === 'other') return e;
  const msg = e instanceof Error ? e.message : String(e);
  const why = kind === 'lock' ? 'lock conflict' : 'connection lost';
  return new TransientStorageError(`mysql ${what}: ${why} (${msg})`, { cause: e });
}

export interface RetryOptions {
  /** attempts in all, the first included */
  attempts?: number;
  baseDelayMs?: number;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** Thrown inside `withRetry` bodies to say whether a connection error may be retried. */
export class Unretryable extends Error {
  constructor(readonly inner: unknown) {
    super('not retryable');
  }
}

const defaultSleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Run `fn`; on a lock error (always) or a connection error (when `connectionSafe`) run it again
 * after a jittered, doubling delay. A body wraps an error in `Unretryable` to say "this one
 * may have committed". Gives up with a `TransientStorageError`.
 */
export async function withRetry<T>(what: string, fn: () => Promise<T>, connectionSafe: boolean, opts: RetryOptions = {}): Promise<T> {
  const attempts = opts.attempts ?? 6;
  const base = opts.baseDelayMs ?? 10;
  const random = opts.random ?? Math.random;
  const sleep = opts.sleep ?? defaultSleep;
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (raw) {
      const pinned = raw instanceof Unretryable;
      const e = pinned ? raw.inner : raw;
      const kind = classifyMysqlError(e);
      const retryable = !pinned && (kind === 'lock' || (kind === 'connection' && connectionSafe));
      if (!retryable || i >= attempts) throw toStorageError(e, what);
      // full jitter on a doubling ceiling: 10, 20, 40, … ms
      await sleep(Math.floor(random() * base * 2 ** i));
    }
  }
}
