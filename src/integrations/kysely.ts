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
 * storage reads). On MySQL their answers are read through your pool's settings, where the
 * storage reads DATETIME as UTC text: a DATETIME read as a Date is turned back into that text,
 * which holds only when your pool reads DATETIME as UTC (`timezone: 'Z'`), checked once per
 * transaction before its first statement.
 */
import type { CompiledQuery, Transaction } from 'kysely';
import { ValidationError } from '../core/errors.js';
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

/** 2000-01-01 00:00:00 UTC, as the probe's DATETIME must read */
const PROBE_MS = Date.UTC(2000, 0, 1);
const PROBE = `-- leasehold kyselyTx: how the pool reads a DATETIME (mysql2's timezone option)
  SELECT CAST('2000-01-01 00:00:00' AS DATETIME) AS probe`;

/** A DATETIME the pool read as a Date (at UTC, checked) as the UTC text the MySQL storage reads and writes back. */
function asUtcText(rows: Record<string, unknown>[]): Record<string, unknown>[] {
  for (const row of rows) {
    for (const [k, v] of Object.entries(row)) if (v instanceof Date) row[k] = v.toISOString().slice(0, 23).replace('T', ' ');
  }
  return rows;
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
  let utc: Promise<void> | undefined;
  const checkUtc = async () => {
    const probe = (await run(PROBE, [])).rows[0]?.probe;
    if (probe instanceof Date && probe.getTime() !== PROBE_MS) {
      throw new ValidationError('INVALID_OPTION', "kyselyTx on MySQL: your pool reads DATETIME in a time zone other than UTC; create it with timezone: 'Z'");
    }
  };
  return {
    async query(call: unknown, values?: unknown) {
      if (typeof call === 'object' && call !== null && 'sql' in call) {
        const c = call as MysqlCall;
        await (utc ??= checkUtc());
        const r = await run(c.sql, c.values);
        // mysql2's answer: rows, or for a write without RETURNING its header
        const head = r.numAffectedRows === undefined ? asUtcText(r.rows) : { affectedRows: Number(r.numAffectedRows), insertId: String(r.insertId ?? 0) };
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
