/**
 * leasehold/kysely: enqueue inside a Kysely transaction, on PostgreSQL and MySQL/MariaDB.
 *
 * ```ts
 * import { kyselyTx } from 'leasehold/kysely';
 * await db.transaction().execute(async (trx) => {
 *   const order = await trx.insertInto('orders').values(row).returning('id').executeTakeFirstOrThrow();
 *   await client.enqueue('send-receipt', { orderId: order.id }, { tx: kyselyTx(trx) });
 * });
 * ```
 *
 * Kysely does not hand out its connection, so the statements go through `trx.executeQuery` as
 * raw compiled queries, without your plugins (a CamelCasePlugin would rename the columns the
 * storage reads). On MySQL they are read through your pool's settings: see docs/databases.md.
 */
import type { CompiledQuery, Transaction } from 'kysely';
import type { TxHandle } from './tx-handle.js';
import { notATransaction } from './tx-handle.js';

export type { TxHandle } from './tx-handle.js';

let queries = 0;

/** What `CompiledQuery.raw(sql, parameters)` makes, built here so that this module never loads kysely itself. */
function rawQuery(sql: string, parameters: readonly unknown[]): CompiledQuery<Record<string, unknown>> {
  return { sql, parameters, query: { kind: 'RawNode', sqlFragments: [sql], parameters: [] }, queryId: { queryId: `leasehold-${++queries}` } };
}

/** A statement as the MySQL storage sends it (mysql2's query options). */
interface MysqlCall {
  sql: string;
  values?: readonly unknown[];
}

/** A statement as the PostgreSQL storage sends it: a text, or a config that may name a prepared statement. */
type PgCall = string | { text: string; values?: readonly unknown[]; rowMode?: string };

/**
 * Your Kysely transaction as `tx`.
 *
 * @param trx - the transaction `db.transaction().execute(…)` (or `startTransaction()`) gives you, while it is open
 * @throws `ValidationError` (`INVALID_OPTION`) for a Kysely instance that is not a transaction
 */
// why `any`: the adapter never reads your tables, so it takes a transaction over any schema
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function kyselyTx(trx: Transaction<any>): TxHandle {
  if ((trx as { isTransaction?: unknown } | null)?.isTransaction !== true) {
    throw notATransaction('kyselyTx', 'pass the transaction db.transaction().execute() gives you, not the Kysely instance');
  }
  const raw = trx.withoutPlugins();
  const run = (sql: string, values: readonly unknown[] | undefined) => raw.executeQuery(rawQuery(sql, values ?? []));
  return {
    async query(call: unknown, values?: unknown) {
      if (typeof call === 'object' && call !== null && 'sql' in call) {
        const c = call as MysqlCall;
        const r = await run(c.sql, c.values);
        // mysql2's answer: rows, or for a write without RETURNING its header
        const head = r.numAffectedRows === undefined ? r.rows : { affectedRows: Number(r.numAffectedRows), insertId: String(r.insertId ?? 0) };
        return [head, undefined];
      }
      const c = call as PgCall;
      const [text, params] = typeof c === 'string' ? [c, values as readonly unknown[] | undefined] : [c.text, c.values];
      if (typeof c === 'object' && c.rowMode !== undefined) throw new Error(`kyselyTx: rowMode ${c.rowMode} is not supported`);
      const r = await run(text, params);
      return { rows: r.rows, rowCount: r.numAffectedRows === undefined ? r.rows.length : Number(r.numAffectedRows) };
    },
  };
}
