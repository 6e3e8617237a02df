/**
 * Open a storage from a URL, loading only the driver that URL needs:
 *   sqlite:path/to/file.db   (relative to the working directory, or absolute)
 *   sqlite:file.db?driver=node:sqlite   (Node's built-in SQLite instead of better-sqlite3)
 *   postgres://user@host:5432/db?schema=leasehold
 *   postgres://user@pgbouncer:6432/db?pgbouncer=transaction&listen=postgres%3A%2F%2Fuser%40db%3A5432%2Fdb
 *                            (through PgBouncer in transaction mode; LISTEN on the direct URL, or polling without it)
 *   mysql://user:pass@host:3306/db      (mariadb:// too)
 *   memory:                  (tests; nothing persists)
 */
import { ValidationError } from '../core/errors.js';
import type { Storage } from '../core/storage.js';
import { checkDriver } from './sqlite/driver.js';
import type { SqliteDriverName } from './sqlite/driver.js';

/** The database URL used when none is given: a SQLite file in the working directory. */
export const DEFAULT_DB_URL = 'sqlite:leasehold.db';

export interface ParsedDbUrl {
  kind: 'sqlite' | 'postgres' | 'mysql' | 'memory';
  /** sqlite: the file path; others: the URL to hand to the driver */
  target: string;
  /** postgres: the schema from ?schema= */
  schema?: string;
  /** postgres: ?pgbouncer=transaction */
  pgbouncer?: 'transaction';
  /** postgres: the direct connection for LISTEN, from ?listen= (percent-encoded) */
  listenUrl?: string;
  /** sqlite: the driver from ?driver= */
  driver?: SqliteDriverName;
}

export function parseDbUrl(url: string): ParsedDbUrl {
  const bad = (why: string): never => {
    throw new ValidationError('INVALID_URL', `invalid database URL ${JSON.stringify(url)}: ${why}; expected sqlite:FILE, postgres://…, mysql://… or memory:`);
  };
  if (typeof url !== 'string' || url.trim() === '') bad('empty');
  if (url === 'memory:') return { kind: 'memory', target: '' };
  if (url.startsWith('sqlite:')) {
    const [rest = '', query] = splitQuery(url.slice('sqlite:'.length));
    const path = rest.replace(/^\/\/(?=\/)/, '');
    if (path === '' || path === '//') bad('no file path');
    const params = new URLSearchParams(query ?? '');
    for (const k of params.keys()) if (k !== 'driver') bad(`unknown option ?${k}= (sqlite takes ?driver=)`);
    const driver = params.get('driver');
    return { kind: 'sqlite', target: path, ...(driver !== null ? { driver: checkDriver(driver) } : {}) };
  }
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return bad('not a URL');
  }
  if (u.protocol === 'postgres:' || u.protocol === 'postgresql:') {
    if (!u.hostname) bad('no host');
    const schema = u.searchParams.get('schema') ?? undefined;
    const pgbouncer = u.searchParams.get('pgbouncer');
    const listenUrl = u.searchParams.get('listen');
    if (pgbouncer !== null && pgbouncer !== 'transaction') return bad('?pgbouncer= takes only transaction (session pooling needs no option)');
    if (listenUrl !== null && !/^postgres(?:ql)?:\/\/[^/]/.test(listenUrl)) bad('?listen= must be a percent-encoded postgres:// URL');
    for (const k of ['schema', 'pgbouncer', 'listen']) u.searchParams.delete(k);
    return {
      kind: 'postgres', target: u.toString(), ...(schema ? { schema } : {}),
      ...(pgbouncer !== null ? { pgbouncer } : {}), ...(listenUrl !== null ? { listenUrl } : {}),
    };
  }
  if (u.protocol === 'mysql:' || u.protocol === 'mariadb:') {
    if (!u.hostname) bad('no host');
    if (u.pathname.length <= 1) bad('no database name');
    u.protocol = 'mysql:';
    return { kind: 'mysql', target: u.toString() };
  }
  return bad(`unknown scheme ${u.protocol}`);
}

/** A sqlite: target's path and its `?query`, split at the last '?' (a path may hold one). */
function splitQuery(target: string): [string, string?] {
  const i = target.lastIndexOf('?');
  return i < 0 || !target.slice(i + 1).startsWith('driver=') ? [target] : [target.slice(0, i), target.slice(i + 1)];
}

/** Options for {@link openStorage}. */
export interface OpenOptions {
  /** connection pool size for server databases (default 10) */
  poolSize?: number;
}

/**
 * Opens the storage a database URL names (`sqlite:FILE`, `postgres://…`, `mysql://…`,
 * `mariadb://…` or `memory:`), loading only that driver; call `storage.migrate()` before first use.
 *
 * @example
 * ```ts
 * const storage = await openStorage(process.env.DATABASE_URL ?? 'sqlite:app.db');
 * ```
 */
export async function openStorage(url: string, opts: OpenOptions = {}): Promise<Storage> {
  const p = parseDbUrl(url);
  switch (p.kind) {
    case 'memory': {
      const { memoryStorage } = await import('./memory/index.js');
      return memoryStorage();
    }
    case 'sqlite': {
      const { sqliteStorage } = await import('./sqlite/index.js');
      return sqliteStorage({ path: p.target, ...(p.driver ? { driver: p.driver } : {}) });
    }
    case 'postgres': {
      const { postgresStorage } = await import('./postgres/index.js');
      const { target: connectionString, schema, pgbouncer, listenUrl } = p;
      return postgresStorage({ connectionString, ...(schema ? { schema } : {}), ...(pgbouncer ? { pgbouncer } : {}), ...(listenUrl ? { listenUrl } : {}), ...(opts.poolSize ? { poolSize: opts.poolSize } : {}) });
    }
    case 'mysql': {
      const { mysqlStorage } = await import('./mysql/index.js');
      return mysqlStorage({ uri: p.target, ...(opts.poolSize ? { poolSize: opts.poolSize } : {}) });
    }
  }
}
