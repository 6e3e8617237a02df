/**
 * Classifies what node-postgres throws. Conditions worth retrying — a dropped or refused
 * connection, a server shutting down, serialization failures and deadlocks — become
 * `TransientStorageError`; a payload PostgreSQL's jsonb cannot hold becomes a
 * `ValidationError`; anything else becomes a `LeaseholdError` with code 'STORAGE'. The driver's
 * error is always kept as `cause`.
 */
import { LeaseholdError, TransientStorageError, ValidationError } from '../../core/errors.js';

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

/** SQLSTATE classes that are transient as a whole. */
const TRANSIENT_CLASSES = ['08']; // connection_exception

const TRANSIENT_NODE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

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
