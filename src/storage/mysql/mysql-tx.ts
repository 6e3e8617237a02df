/**
 * Transactions with few round trips, and the retry rules around them.
 *
 * Every statement is a round trip, and on a busy machine the round trip (a socket write, a
 * context switch to the server and back) costs more than a small statement itself. Where the
 * connection accepts several statements per query (the pool we create has multipleStatements),
 * a transaction's opening statements (SET TRANSACTION …, START TRANSACTION) go out with its
 * first statement, and the write paths send their last statements together with COMMIT: a claim
 * or a finish batch is two round trips. On a caller's pool the same statements go one by one.
 * A transaction that sends nothing sends no BEGIN or COMMIT either.
 */
import { Unretryable, classifyMysqlError, withRetry } from './mysql-errors.js';
import type { PoolLike, Queryable } from './mysql-db.js';
import { run } from './mysql-db.js';

/** One statement and its values. */
export interface Stmt {
  sql: string;
  values?: readonly unknown[];
}

export interface TxSql {
  begin: string;
  commit: string;
  rollback: string;
  readCommitted: string;
}

/** Statements in order, as one query where `multi`, else one by one; one result per statement. */
export async function runAll(c: Queryable, stmts: readonly Stmt[], multi: boolean): Promise<unknown[]> {
  if (!multi || stmts.length < 2) {
    const out: unknown[] = [];
    for (const s of stmts) out.push(await run<unknown>(c, s.sql, s.values));
    return out;
  }
  // mysql2 fills the placeholders left to right across the whole text, and returns a result per statement
  return run<unknown[]>(c, stmts.map((s) => s.sql).join(';\n'), stmts.flatMap((s) => s.values ?? []));
}

/** A connection inside a transaction that opens with the first statement sent on it. */
export class TxConn implements Queryable {
  #pending: Stmt[];
  /** COMMIT has been sent (it may or may not have landed if the connection broke) */
  committing = false;
  committed = false;

  constructor(
    readonly conn: Queryable,
    readonly multi: boolean,
    opening: readonly string[],
    private readonly commitSql: string,
  ) {
    this.#pending = opening.map((sql) => ({ sql }));
  }

  /** Whether the opening statements have gone out (there is a transaction to end). */
  get opened(): boolean {
    return this.#pending.length === 0;
  }

  /** Queryable: runs the statement, after the opening ones if they have not gone out yet. */
  async query(options: { sql: string; values?: unknown }): Promise<[unknown, unknown]> {
    const [res] = await this.#send([{ sql: options.sql, values: options.values as readonly unknown[] | undefined }], false);
    return [res, undefined];
  }

  /** Run the transaction's last statements and COMMIT; their results. */
  commitWith(stmts: readonly Stmt[]): Promise<unknown[]> {
    return this.#send(stmts, true);
  }

  async #send(stmts: readonly Stmt[], commit: boolean): Promise<unknown[]> {
    const lead = this.#pending;
    this.#pending = [];
    const all = [...lead, ...stmts];
    if (commit) {
      all.push({ sql: this.commitSql });
      this.committing = true;
    }
    const results = await runAll(this.conn, all, this.multi);
    if (commit) this.committed = true;
    return results.slice(lead.length, lead.length + stmts.length);
  }
}

/**
 * The last statements of a write path: with COMMIT in the same round trip inside our own
 * transaction; one by one on a caller's connection (the caller commits).
 */
export function runLast(c: Queryable, stmts: readonly Stmt[]): Promise<unknown[]> {
  return c instanceof TxConn ? c.commitWith(stmts) : runAll(c, stmts, false);
}

/**
 * Run `fn` in one transaction on a pooled connection; on deadlock / lock wait timeout roll back
 * and run it again; on a dropped connection retry only if COMMIT was not yet sent.
 */
export async function inTransaction<T>(
  pool: PoolLike,
  sql: TxSql,
  what: string,
  fn: (c: Queryable) => Promise<T>,
  opts: { readCommitted: boolean; multi: boolean },
): Promise<T> {
  return withRetry(
    what,
    async () => {
      const c = await pool.getConnection();
      const tx = new TxConn(c, opts.multi, opts.readCommitted ? [sql.readCommitted, sql.begin] : [sql.begin], sql.commit);
      let broken = false;
      try {
        const out = await fn(tx);
        if (tx.opened && !tx.committed) {
          tx.committing = true;
          await run(c, sql.commit);
        }
        return out;
      } catch (e) {
        broken = classifyMysqlError(e) === 'connection';
        if (!broken && tx.opened) await run(c, sql.rollback).catch(() => (broken = true));
        // a COMMIT that broke the connection may have landed: never run the work twice
        throw tx.committing && broken ? new Unretryable(e) : e;
      } finally {
        if (broken) c.destroy();
        else c.release();
      }
    },
    true,
  );
}

/** Connection errors that prove the statement never left this process, so running it again cannot run it twice. */
function neverSent(e: unknown): boolean {
  const code = typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined;
  if (code === 'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR' || code === 'PROTOCOL_ENQUEUE_AFTER_QUIT') return true;
  return e instanceof Error && /connection is in closed state/i.test(e.message);
}

/**
 * Run `fn` -- ONE statement that must not run twice (an INSERT) -- on a pooled connection in
 * autocommit: atomic on its own, without the BEGIN and COMMIT round trips. Lock errors are
 * retried (the server rolled the statement back); a dropped connection only when the statement
 * provably was never sent, since otherwise it may have committed.
 */
export async function inAutocommit<T>(pool: PoolLike, what: string, fn: (c: Queryable) => Promise<T>): Promise<T> {
  return withRetry(
    what,
    async () => {
      const c = await pool.getConnection();
      let broken = false;
      try {
        return await fn(c);
      } catch (e) {
        broken = classifyMysqlError(e) === 'connection';
        throw broken && !neverSent(e) ? new Unretryable(e) : e;
      } finally {
        if (broken) c.destroy();
        else c.release();
      }
    },
    true,
  );
}
