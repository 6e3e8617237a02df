/**
 * The two ways the adapter talks to the server: one statement (autocommit on the pool, or on
 * the caller's transaction client), or a short transaction of our own on one pooled
 * connection. Driver errors leave here classified (postgres-errors.ts).
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { classifyPgError, isTransientPgError } from './postgres-errors.js';
import type { Queryable, Row } from './postgres-rows.js';

/**
 * A statement run as a named prepared statement: each connection parses and plans it once,
 * then only binds and executes. Only for statements with explicit column lists: a `*` result
 * would change type when a migration adds a column, and the server refuses such a cached plan.
 */
export interface Prepared {
  name: string;
  text: string;
  /** rows as arrays of column values (cheaper to build and read than objects keyed by name) */
  rowMode?: 'array';
}

export function prepared(text: string, rowMode?: 'array'): Prepared {
  return { name: `leasehold_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`, text, ...(rowMode ? { rowMode } : {}) };
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
export async function transaction<T>(pool: pg.Pool, what: string, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (e) {
    throw classifyPgError(e, what);
  }
  let broken = false;
  try {
    await client.query('BEGIN');
    const out = await fn(client);
    await client.query('COMMIT');
    return out;
  } catch (e) {
    broken = isTransientPgError(e);
    await client.query('ROLLBACK').catch(() => {
      broken = true;
    });
    throw classifyPgError(e, what);
  } finally {
    client.release(broken);
  }
}
