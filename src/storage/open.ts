/**
 * Open a storage from a URL, loading only the driver that URL needs:
 *   sqlite:path/to/file.db   (relative to the working directory, or absolute)
 *   postgres://user@host:5432/db?schema=leasehold
 *   mysql://user:pass@host:3306/db      (mariadb:// too)
 *   memory:                  (tests; nothing persists)
 */
import { ValidationError } from '../core/errors.js';
import type { Storage } from '../core/storage.js';

export const DEFAULT_DB_URL = 'sqlite:leasehold.db';

export interface ParsedDbUrl {
  kind: 'sqlite' | 'postgres' | 'mysql' | 'memory';
  /** sqlite: the file path; others: the URL to hand to the driver */
  target: string;
  /** postgres: the schema from ?schema= */
  schema?: string;
}

export function parseDbUrl(url: string): ParsedDbUrl {
  const bad = (why: string): never => {
    throw new ValidationError('INVALID_URL', `invalid database URL ${JSON.stringify(url)}: ${why}; expected sqlite:FILE, postgres://…, mysql://… or memory:`);
  };
  if (typeof url !== 'string' || url.trim() === '') bad('empty');
  if (url === 'memory:') return { kind: 'memory', target: '' };
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (path === '' || path === '//') bad('no file path');
    return { kind: 'sqlite', target: path };
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
    u.searchParams.delete('schema');
    return { kind: 'postgres', target: u.toString(), ...(schema ? { schema } : {}) };
  }
  if (u.protocol === 'mysql:' || u.protocol === 'mariadb:') {
    if (!u.hostname) bad('no host');
    if (u.pathname.length <= 1) bad('no database name');
    u.protocol = 'mysql:';
    return { kind: 'mysql', target: u.toString() };
  }
  return bad(`unknown scheme ${u.protocol}`);
}

export interface OpenOptions {
  /** connection pool size for server databases (default 10) */
  poolSize?: number;
}

export async function openStorage(url: string, opts: OpenOptions = {}): Promise<Storage> {
  const p = parseDbUrl(url);
  switch (p.kind) {
    case 'memory': {
      const { memoryStorage } = await import('./memory/index.js');
      return memoryStorage();
    }
    case 'sqlite': {
      const { sqliteStorage } = await import('./sqlite/index.js');
      return sqliteStorage({ path: p.target });
    }
    case 'postgres': {
      const { postgresStorage } = await import('./postgres/index.js');
      return postgresStorage({ connectionString: p.target, ...(p.schema ? { schema: p.schema } : {}), ...(opts.poolSize ? { poolSize: opts.poolSize } : {}) });
    }
    case 'mysql': {
      const { mysqlStorage } = await import('./mysql/index.js');
      return mysqlStorage({ uri: p.target, ...(opts.poolSize ? { poolSize: opts.poolSize } : {}) });
    }
  }
}
