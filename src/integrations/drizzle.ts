/**
 * leasehold/drizzle: enqueue inside a Drizzle transaction, on PostgreSQL (node-postgres driver)
 * and MySQL/MariaDB (mysql2 driver).
 *
 * ```ts
 * import { drizzleTx } from 'leasehold/drizzle';
 * await db.transaction(async (tx) => {
 *   const [order] = await tx.insert(orders).values(row).returning({ id: orders.id });
 *   await client.enqueue('send-receipt', { orderId: order.id }, { tx: drizzleTx(tx) });
 * });
 * ```
 */
import type { MySqlTransaction } from 'drizzle-orm/mysql-core';
import type { PgTransaction } from 'drizzle-orm/pg-core';
import { type TxHandle, connectionTx, notATransaction } from './tx-handle.js';

export type { TxHandle } from './tx-handle.js';

// why `any`: the adapter never reads your tables, so it takes a transaction over any schema
/* eslint-disable @typescript-eslint/no-explicit-any */
/** A Drizzle transaction on PostgreSQL or MySQL, whatever its schema. */
export type DrizzleTransaction = PgTransaction<any, any, any> | MySqlTransaction<any, any, any, any>;
/* eslint-enable @typescript-eslint/no-explicit-any */

/**
 * Your Drizzle transaction as `tx`. The storage's statements go to the driver client the
 * transaction runs on (Drizzle's session holds it), so they bypass Drizzle's result mapping.
 *
 * @param tx - the transaction `db.transaction(…)` gives you, while it is open
 * @throws `ValidationError` (`INVALID_OPTION`) for a database that is not a transaction, or one on a driver other than node-postgres and mysql2
 */
export function drizzleTx(tx: DrizzleTransaction): TxHandle {
  const t = tx as unknown as { rollback?: unknown; session?: { client?: unknown } } | null;
  // only a transaction can roll back: the database object itself would write in autocommit
  if (typeof t?.rollback !== 'function') throw notATransaction('drizzleTx', 'pass the transaction db.transaction() gives you, not the database');
  // the transaction's session holds the client it runs on (a pool's connection, checked out for it)
  const client = t.session?.client;
  if (client === undefined) throw notATransaction('drizzleTx', 'this Drizzle transaction has no driver client (node-postgres and mysql2 are supported)');
  return connectionTx('drizzleTx', () => client);
}
