/**
 * Throwaway database servers for the chaos run: a PostgreSQL cluster and a MariaDB data dir,
 * each in its own temp dir on a free port of 127.0.0.1, so the run can restart the server
 * itself without touching the shared servers other tests use. Restart = immediate stop (a
 * crash as far as the clients can tell) and a start on the same data dir.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { pause } from '../process/support-checks.js';
import { freePort } from '../support/net.js';

const run = promisify(execFile);

/** Servers still running: stopped at once if the run exits without destroying them. */
const running = new Map<string, () => void>();
process.on('exit', () => {
  for (const stop of running.values()) stop();
});

export type ServerKind = 'postgres' | 'mysql';

export interface ThrowawayServer {
  kind: ServerKind;
  /** superuser URL of the server's default database */
  adminUrl: string;
  port: number;
  /** stop at once and start again on the same data dir; resolves once it accepts connections */
  restart(): Promise<void>;
  /** stop and delete the data dir */
  destroy(): Promise<void>;
}

/** PostgreSQL's bin dir: $LEASEHOLD_CHAOS_PG_BINDIR, else the newest /usr/lib/postgresql/N/bin. */
function pgBinDir(): string | null {
  const env = process.env.LEASEHOLD_CHAOS_PG_BINDIR;
  if (env) return existsSync(path.join(env, 'initdb')) ? env : null;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).filter((v) => existsSync(path.join(root, v, 'bin/initdb'))).sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(root, versions[0], 'bin') : null;
}

function onPath(names: string[]): string | null {
  for (const dir of [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/bin']) {
    for (const n of names) if (dir && existsSync(path.join(dir, n))) return path.join(dir, n);
  }
  return null;
}

/** Why a throwaway server of this kind cannot be started here, or null when it can. */
export function missingBinaries(kind: ServerKind): string | null {
  if (kind === 'postgres') return pgBinDir() ? null : 'PostgreSQL server binaries not found (initdb, pg_ctl under /usr/lib/postgresql/N/bin; or set LEASEHOLD_CHAOS_PG_BINDIR)';
  const missing = [onPath(['mariadbd', 'mysqld']) ? null : 'mariadbd', onPath(['mariadb-install-db', 'mysql_install_db']) ? null : 'mariadb-install-db'].filter(Boolean);
  return missing.length ? `MariaDB server binaries not found: ${missing.join(', ')}` : null;
}


/** Poll `probe` until it resolves; fail after `timeoutMs`, or once `gone` names why it never will. */
async function untilUp(what: string, dir: string, probe: () => Promise<void>, gone: () => string | null = () => null, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await probe();
    } catch (e) {
      const why = gone() ?? (Date.now() > until ? `no connection within ${timeoutMs} ms: ${(e as Error).message}` : null);
      if (why) throw new Error(`${what} did not come up (${why}); its log:\n${serverLogTail(dir)}`);
      await pause(50);
    }
  }
}

/** A PostgreSQL cluster in `dir`, run by the `postgres` OS user when we are root (initdb refuses root). */
export async function startPostgres(dir: string): Promise<ThrowawayServer> {
  const bin = pgBinDir();
  if (!bin) throw new Error(missingBinaries('postgres')!);
  const asRoot = process.getuid?.() === 0;
  const pgRun = (cmd: string, args: string[]) => (asRoot ? run('runuser', ['-u', 'postgres', '--', path.join(bin, cmd), ...args]) : run(path.join(bin, cmd), args));
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const data = path.join(dir, 'data');
  const log = path.join(dir, 'server.log');
  const port = await freePort();
  await pgRun('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  // fsync off only matters to an operating-system crash; commits still reach the OS before they are acknowledged
  appendFileSync(path.join(data, 'postgresql.conf'), `\nlisten_addresses = '127.0.0.1'\nport = ${port}\nunix_socket_directories = '${dir}'\nfsync = off\nmax_connections = 200\n`);
  const start = () => pgRun('pg_ctl', ['-D', data, '-l', log, '-w', '-t', '60', 'start']);
  const stop = () => pgRun('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
  const adminUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const ready = () =>
    untilUp('PostgreSQL', dir, async () => {
      const c = new pg.Client({ connectionString: adminUrl });
      c.on('error', () => {});
      await c.connect();
      await c.end();
    });
  await start();
  running.set(dir, () => {
    try {
      execFileSync(asRoot ? 'runuser' : path.join(bin, 'pg_ctl'), [...(asRoot ? ['-u', 'postgres', '--', path.join(bin, 'pg_ctl')] : []), '-D', data, '-m', 'immediate', 'stop'], { stdio: 'ignore' });
    } catch {
      // already stopped
    }
  });
  await ready();
  return {
    kind: 'postgres',
    adminUrl,
    port,
    restart: async () => {
      await stop();
      await start();
      await ready();
    },
    destroy: async () => {
      await stop().catch(() => {});
      running.delete(dir);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A MariaDB server on a fresh data dir in `dir`, without grant tables (any user name connects). */
export async function startMariaDb(dir: string): Promise<ThrowawayServer> {
  const mariadbd = onPath(['mariadbd', 'mysqld']);
  const installDb = onPath(['mariadb-install-db', 'mysql_install_db']);
  if (!mariadbd || !installDb) throw new Error(missingBinaries('mysql')!);
  const data = path.join(dir, 'data');
  mkdirSync(data, { recursive: true });
  const user = process.getuid?.() === 0 ? ['--user=root'] : [];
  await run(installDb, ['--no-defaults', `--datadir=${data}`, '--auth-root-authentication-method=normal', '--skip-test-db', ...user]);
  const port = await freePort();
  const args = [
    '--no-defaults', `--datadir=${data}`, `--port=${port}`, '--bind-address=127.0.0.1', `--socket=${path.join(dir, 'mysqld.sock')}`,
    `--pid-file=${path.join(dir, 'mysqld.pid')}`, `--log-error=${path.join(dir, 'server.log')}`, '--skip-grant-tables', '--skip-name-resolve',
    '--character-set-server=utf8mb4', '--collation-server=utf8mb4_general_ci', '--max-connections=500',
    // the redo log reaches the OS at each commit (a server crash loses nothing); fsync once a second
    '--innodb-flush-log-at-trx-commit=2', ...user,
  ];
  const adminUrl = `mysql://root@127.0.0.1:${port}/mysql`;
  let server: ChildProcess | null = null;
  let exited: Promise<void> = Promise.resolve();
  const start = async () => {
    const child = spawn(mariadbd, args, { stdio: 'ignore' });
    server = child;
    exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const gone = () => (child.exitCode !== null || child.signalCode !== null ? `mariadbd exited (${child.exitCode ?? child.signalCode})` : null);
    await untilUp('MariaDB', dir, async () => {
      const c = await mysql.createConnection(adminUrl);
      await c.end();
    }, gone);
  };
  const kill = async () => {
    server?.kill('SIGKILL');
    await exited;
  };
  running.set(dir, () => server?.kill('SIGKILL'));
  await start();
  return {
    kind: 'mysql',
    adminUrl,
    port,
    restart: async () => {
      await kill();
      await start();
    },
    destroy: async () => {
      await kill();
      running.delete(dir);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The server's log, for a failure message. */
export function serverLogTail(dir: string, n = 20): string {
  const f = path.join(dir, 'server.log');
  return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').slice(-n).join('\n') : '(no server log)';
}
