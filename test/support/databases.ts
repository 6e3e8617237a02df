/**
 * Which database servers the tests may use, and what to do when one is missing.
 *
 * LEASEHOLD_REQUIRE_DBS=postgres,mysql (or "all"; set by .ci/run) makes a missing server a
 * failure. Otherwise a missing server skips that suite, loudly: a line goes to stderr and to
 * the file named by LEASEHOLD_SKIP_REPORT, which scripts/run-tests.mjs prints at the end.
 */
import { appendFileSync } from 'node:fs';
import net from 'node:net';

export type ServerKind = 'postgres' | 'mysql';

export const TEST_URLS: Record<ServerKind, string> = {
  postgres: process.env.LEASEHOLD_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  mysql: process.env.LEASEHOLD_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test',
};

export function isRequired(kind: ServerKind): boolean {
  const req = (process.env.LEASEHOLD_REQUIRE_DBS ?? '').split(',').map((s) => s.trim());
  return req.includes('all') || req.includes(kind);
}

function reachable(url: string): Promise<string | null> {
  const u = new URL(url);
  const port = Number(u.port || (u.protocol.startsWith('postgres') ? 5432 : 3306));
  return new Promise((resolve) => {
    const sock = net.connect({ host: u.hostname, port, timeout: 2000 });
    sock.once('connect', () => {
      sock.destroy();
      resolve(null);
    });
    sock.once('timeout', () => {
      sock.destroy();
      resolve(`timed out connecting to ${u.hostname}:${port}`);
    });
    sock.once('error', (e) => resolve(`${u.hostname}:${port}: ${(e as NodeJS.ErrnoException).code ?? e.message}`));
  });
}

/**
 * Resolve to the URL when the server is up; to null (suite skipped, reported) when it is not
 * and not required; throw when it is required and missing.
 */
export async function serverFor(kind: ServerKind, suite: string): Promise<string | null> {
  const url = TEST_URLS[kind];
  const problem = await reachable(url);
  if (problem === null) return url;
  const msg = `${kind} unreachable (${problem})`;
  if (isRequired(kind)) throw new Error(`${suite}: ${msg}, and LEASEHOLD_REQUIRE_DBS requires it`);
  const line = `SKIPPED ${suite}: ${msg}. Start the server or set LEASEHOLD_TEST_${kind.toUpperCase()}_URL.`;
  process.stderr.write(`\n!!! ${line}\n\n`);
  if (process.env.LEASEHOLD_SKIP_REPORT) appendFileSync(process.env.LEASEHOLD_SKIP_REPORT, `${line}\n`);
  return null;
}
