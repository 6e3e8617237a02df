/**
 * What every ORM adapter hands the storage as `tx`: the driver connection under the library's
 * transaction. The PostgreSQL and MySQL storages already speak a pg client and a mysql2
 * connection of yours, so the statements run inside your transaction exactly as the storage
 * wrote them (its placeholders, array parameters and per-query options), never through the
 * library's query builder, placeholder rewriting or result mappers.
 */
import { ValidationError } from '../core/errors.js';

/**
 * Your transaction, as `client.enqueue(type, payload, { tx })` and `enqueueMany` take it (and a
 * handler's `ctx.succeedInTransaction(tx)`). Made by `knexTx`, `kyselyTx`, `drizzleTx` or `typeormTx`.
 */
export interface TxHandle {
  /** @internal one statement in your transaction, as the storage's driver would run it */
  query(...args: unknown[]): Promise<unknown>;
}

/** A driver connection's query: pg's `query(text | config, values)`, mysql2/promise's `query(options)`. */
interface DriverQuery {
  query(...args: unknown[]): Promise<unknown>;
}

/** A mysql2 connection with callbacks is asked through its promise wrapper; pg clients and mysql2/promise connections as they are. */
function promised(library: string, conn: unknown): DriverQuery {
  const c = conn as { query?: unknown; promise?: unknown } | null;
  if (c && typeof c.promise === 'function') return (c.promise as () => DriverQuery).call(c);
  if (c && typeof c.query === 'function') return c as DriverQuery;
  throw new ValidationError('INVALID_OPTION', `${library}: the transaction's connection is neither a pg client nor a mysql2 connection (other drivers are not supported)`);
}

/**
 * The connection `connection()` gives, asked again for each statement: it throws once the
 * transaction is over, so nothing is written outside it.
 */
export function connectionTx(library: string, connection: () => unknown): TxHandle {
  return {
    async query(...args) {
      return promised(library, await connection()).query(...args);
    },
  };
}

/** The ValidationError an adapter throws when it is given something that is not an open transaction. */
export function notATransaction(library: string, what: string): ValidationError {
  return new ValidationError('INVALID_OPTION', `${library}: ${what}`);
}
