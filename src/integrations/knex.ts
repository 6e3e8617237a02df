/**
 * leasehold/knex: enqueue inside a Knex transaction, on PostgreSQL (pg) and MySQL/MariaDB (mysql2).
 *
 * ```ts
 * import { knexTx } from 'leasehold/knex';
 * await knex.transaction(async (trx) => {
 *   const [order] = await trx('orders').insert(row).returning('id');
 *   await client.enqueue('send-receipt', { orderId: order.id }, { tx: knexTx(trx) });
 * });
 * ```
 */
import type { Knex } from 'knex';
import { type TxHandle, connectionTx, notATransaction } from './tx-handle.js';

export type { TxHandle } from './tx-handle.js';

/**
 * Your Knex transaction as `tx`. The storage's statements go to the transaction's own connection
 * (`trx.raw` would rewrite `?` and `??` and expand array parameters into lists).
 *
 * @param trx - the transaction `knex.transaction(…)` gives you, while it is open
 * @throws `ValidationError` (`INVALID_OPTION`) for a knex instance that is not a transaction, and
 *   for each statement sent once the transaction is over
 */
export function knexTx(trx: Knex.Transaction): TxHandle {
  if ((trx as { isTransaction?: unknown } | null)?.isTransaction !== true) {
    throw notATransaction('knexTx', 'pass the transaction knex.transaction() gives you, not the knex instance');
  }
  return connectionTx('knexTx', () => {
    if (trx.isCompleted()) throw notATransaction('knexTx', 'the transaction is already committed or rolled back');
    // the transaction's client hands out the one connection the transaction runs on
    return (trx.client as { acquireConnection(): Promise<unknown> }).acquireConnection();
  });
}
