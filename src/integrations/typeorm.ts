/**
 * leasehold/typeorm: enqueue inside a TypeORM transaction, on PostgreSQL (pg) and MySQL/MariaDB
 * (mysql2).
 *
 * ```ts
 * import { typeormTx } from 'leasehold/typeorm';
 * await dataSource.transaction(async (manager) => {
 *   const order = await manager.save(Order, row);
 *   await client.enqueue('send-receipt', { orderId: order.id }, { tx: typeormTx(manager) });
 * });
 * ```
 */
import type { EntityManager } from 'typeorm';
import { type TxHandle, connectionTx, notATransaction } from './tx-handle.js';

export type { TxHandle } from './tx-handle.js';

/**
 * Your TypeORM transaction as `tx`: the statements go to the connection its query runner holds.
 *
 * @param manager - the EntityManager of an open transaction: what `dataSource.transaction(…)`
 *   gives you, or `queryRunner.manager` after `queryRunner.startTransaction()`
 * @throws `ValidationError` (`INVALID_OPTION`) for a manager outside a transaction, and for each
 *   statement sent once the transaction is over
 */
export function typeormTx(manager: EntityManager): TxHandle {
  const runner = manager?.queryRunner;
  const open = () => runner?.isTransactionActive === true && !runner.isReleased;
  if (!open()) throw notATransaction('typeormTx', 'pass the EntityManager of an open transaction (dataSource.transaction(async (manager) => …)), not dataSource.manager');
  return connectionTx('typeormTx', () => {
    if (!open()) throw notATransaction('typeormTx', 'the transaction is already committed or rolled back');
    return runner?.connect();
  });
}
