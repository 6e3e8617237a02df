/**
 * A PgBouncer of the suite's own in front of the test PostgreSQL: Debian's /usr/sbin/pgbouncer
 * (never the system service) started from a temp config in transaction pooling mode on a free
 * port, with a small server pool so many client connections really share a few server
 * connections. Its admin console (`SHOW CLIENTS`, `SHOW SERVERS`) lets tests see who connected
 * through it. Missing binary: the suite is SKIPPED loudly; it fails instead when
 * LEASEHOLD_REQUIRE_DBS names postgres or all (CI installs pgbouncer in .ci/run).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { isRequired } from '../support/databases.js';
import { freePort } from '../support/net.js';

export const PGBOUNCER = process.env.LEASEHOLD_PGBOUNCER ?? '/usr/sbin/pgbouncer';

/** server connections per database and user: fewer than the clients the tests open */
export const SERVER_POOL = 3;

/** Null when the binary is there; else the skip line (already reported), or a throw when required. */
export function pgbouncerMissing(suite: string): string | null {
  if (existsSync(PGBOUNCER)) return null;
  const msg = `no PgBouncer at ${PGBOUNCER} (apt-get install -y pgbouncer, or set LEASEHOLD_PGBOUNCER)`;
  if (isRequired('postgres')) throw new Error(`${suite}: ${msg}, and LEASEHOLD_REQUIRE_DBS requires it`);
  const line = `SKIPPED ${suite}: ${msg}.`;
  process.stderr.write(`\n!!! ${line}\n\n`);
  if (process.env.LEASEHOLD_SKIP_REPORT) appendFileSync(process.env.LEASEHOLD_SKIP_REPORT, `${line}\n`);
  return line;
}

export interface RunningPgbouncer {
  /** the PostgreSQL URL, pointed at the bouncer */
  url: string;
  /** rows of an admin console command, e.g. SHOW CLIENTS, for the test database only */
  show(what: 'CLIENTS' | 'SERVERS'): Promise<Record<string, unknown>[]>;
  stop(): Promise<void>;
}


function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port }, () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

/** Start a bouncer in front of `postgresUrl` (a port taken meanwhile by someone else: tried again). */
export async function startPgbouncer(postgresUrl: string): Promise<RunningPgbouncer> {
  for (let tries = 1; ; tries++) {
    try {
      return await startOnce(postgresUrl);
    } catch (e) {
      if (tries >= 3) throw e;
    }
  }
}

async function startOnce(postgresUrl: string): Promise<RunningPgbouncer> {
  const server = new URL(postgresUrl);
  const user = decodeURIComponent(server.username || 'postgres');
  const dbname = server.pathname.slice(1);
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-pgbouncer-'));
  // pgbouncer refuses to run as root; as root it is started with -u nobody, which must read these
  chmodSync(dir, 0o755);
  const ini = path.join(dir, 'pgbouncer.ini');
  const password = server.password ? ` password=${decodeURIComponent(server.password)}` : '';
  writeFileSync(path.join(dir, 'users.txt'), `"${user}" ""\n`, { mode: 0o644 });
  writeFileSync(ini, `[databases]
${dbname} = host=${server.hostname} port=${server.port || 5432} dbname=${dbname} user=${user}${password}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
logfile =
pidfile =
auth_type = trust
auth_file = ${path.join(dir, 'users.txt')}
admin_users = ${user}
pool_mode = transaction
default_pool_size = ${SERVER_POOL}
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = 500
query_wait_timeout = 60
`, { mode: 0o644 });
  const asRoot = process.getuid?.() === 0;
  const child: ChildProcess = spawn(PGBOUNCER, [...(asRoot ? ['-u', 'nobody'] : []), ini], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr?.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
  let exited = false;
  const gone = new Promise<void>((r) => child.once('exit', () => ((exited = true), r())));
  const kill = () => child.kill('SIGTERM');
  process.once('exit', kill);
  const stop = async () => {
    process.off('exit', kill);
    if (!exited) kill();
    await gone;
    rmSync(dir, { recursive: true, force: true });
  };
  const until = Date.now() + 10_000;
  while (!(await accepts(port))) {
    if (exited || Date.now() > until) {
      await stop();
      throw new Error(`pgbouncer did not start on port ${port}:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  const at = `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}`;
  return {
    url: `${at}/${dbname}`,
    async show(what) {
      // the admin console speaks the simple query protocol only: no parameters
      const admin = new pg.Client({ connectionString: `${at}/pgbouncer` });
      await admin.connect();
      try {
        const res = await admin.query(`SHOW ${what}`);
        return (res.rows as Record<string, unknown>[]).filter((r) => r.database === dbname);
      } finally {
        await admin.end();
      }
    },
    stop,
  };
}
