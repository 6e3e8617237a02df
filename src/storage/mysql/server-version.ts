/**
 * Which MySQL and MariaDB servers leasehold runs on, read from `SELECT VERSION()`: it needs
 * SKIP LOCKED and JSON_TABLE, and picks the exact-match collation the server has.
 */
import { LeaseholdError } from '../../core/errors.js';

/** What the server's version string says, and whether leasehold runs on it. */
export interface MysqlServerInfo {
  /** MySQL or MariaDB */
  flavor: 'mysql' | 'mariadb';
  /** the major version, e.g. 8 */
  major: number;
  /** the minor version */
  minor: number;
  /** the patch version */
  patch: number;
  /** has `FOR UPDATE SKIP LOCKED` and `JSON_TABLE`: MySQL 8.0.4+, MariaDB 10.6+ */
  supported: boolean;
  /** exact-match collation for text columns */
  collation: string;
}

function atLeast(v: [number, number, number], min: [number, number, number]): boolean {
  for (let i = 0; i < 3; i++) if (v[i]! !== min[i]!) return v[i]! > min[i]!;
  return true;
}

/** Parse `SELECT VERSION()`: "8.0.36-0ubuntu…", "10.11.6-MariaDB-1:…", "5.5.5-10.6.12-MariaDB". */
export function parseServerVersion(version: string): MysqlServerInfo {
  const mariadb = /mariadb/i.test(version);
  const s = version.trim().replace(/^5\.5\.5-(?=\d+\.\d+\.\d+-MariaDB)/i, '');
  const m = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(s);
  if (!m) throw new LeaseholdError('UNSUPPORTED_SERVER', `cannot read the server version from "${version}"`);
  const v: [number, number, number] = [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
  const supported = mariadb ? atLeast(v, [10, 6, 0]) : atLeast(v, [8, 0, 4]);
  const collation = mariadb ? 'utf8mb4_nopad_bin' : atLeast(v, [8, 0, 17]) ? 'utf8mb4_0900_bin' : 'utf8mb4_bin';
  return { flavor: mariadb ? 'mariadb' : 'mysql', major: v[0], minor: v[1], patch: v[2], supported, collation };
}

/** Throws `LeaseholdError('UNSUPPORTED_SERVER')` for servers without SKIP LOCKED or JSON_TABLE (the batched hot path). */
export function checkServerVersion(version: string): MysqlServerInfo {
  const info = parseServerVersion(version);
  if (!info.supported) {
    const need = info.flavor === 'mariadb' ? 'MariaDB 10.6 or newer' : 'MySQL 8.0.4 or newer';
    throw new LeaseholdError('UNSUPPORTED_SERVER', `leasehold needs ${need} (for SELECT … FOR UPDATE SKIP LOCKED and JSON_TABLE); this server is ${info.flavor} ${version}`);
  }
  return info;
}
