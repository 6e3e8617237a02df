/**
 * The chaos suite: on each database, several `leasehold worker` processes drain thousands of
 * jobs while the run SIGKILLs and SIGSTOPs lease holders, kills the workers' connections and
 * restarts the database server itself (PostgreSQL and MariaDB run as throwaway servers of
 * their own, never the shared ones). Prints a table of figures and exits non-zero on any lost
 * or stuck job, overlapping lease, history gap, worker crash or duplicate effect outside the
 * documented window.
 *
 *   scripts/node.sh 24 node --import tsx test/chaos/run.ts [--db sqlite,postgres,mysql] [--jobs N]
 *
 * A database named with --db, or required by LEASEHOLD_REQUIRE_DBS, fails the run when its
 * server binaries are missing; otherwise that database is skipped loudly.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { killAll } from '../process/support-cli.js';
import { isRequired } from '../support/databases.js';
import type { Audit } from './audit.js';
import { audit, failed } from './audit.js';
import { runChaos } from './chaos.js';
import type { ChaosSettings } from './chaos.js';
import type { ChaosDb, DbKind } from './db.js';
import { openChaosDb } from './db.js';
import { printTable } from './report.js';
import type { DbResult } from './report.js';
import { missingBinaries, serverLogTail } from './servers.js';

const KINDS: readonly DbKind[] = ['sqlite', 'postgres', 'mysql'];

const { values } = parseArgs({
  options: {
    db: { type: 'string' },
    jobs: { type: 'string', default: '5000' },
    workers: { type: 'string', default: '4' },
    concurrency: { type: 'string', default: '4' },
    'lease-ms': { type: 'string', default: '2000' },
  },
});

function positive(name: string, v: string | undefined): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) {
    console.error(`chaos: --${name} must be a positive whole number, got ${JSON.stringify(v)}`);
    process.exit(2);
  }
  return n;
}

const kinds = (values.db ?? KINDS.join(',')).split(',').map((k) => k.trim()) as DbKind[];
for (const k of kinds) {
  if (!KINDS.includes(k)) {
    console.error(`chaos: unknown database ${JSON.stringify(k)} (one of ${KINDS.join(', ')})`);
    process.exit(2);
  }
}
const jobs = positive('jobs', values.jobs);
const workers = positive('workers', values.workers);
const concurrency = positive('concurrency', values.concurrency);
const leaseMs = positive('lease-ms', values['lease-ms']);

let current: ChaosDb | null = null;
let currentDir: string | null = null;
async function cleanUp(): Promise<void> {
  await killAll();
  await current?.close().catch(() => {});
  await current?.server?.destroy().catch(() => {});
  current = null;
}
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    console.error(`chaos: ${sig}; stopping the workers and the throwaway servers`);
    void cleanUp().finally(() => {
      if (currentDir) rmSync(currentDir, { recursive: true, force: true });
      process.exit(130);
    });
  });
}

async function runOne(kind: DbKind): Promise<DbResult> {
  const startedAt = Date.now();
  const log = (msg: string) => console.log(`[chaos ${kind} +${((Date.now() - startedAt) / 1000).toFixed(1)}s] ${msg}`);
  if (kind !== 'sqlite') {
    const missing = missingBinaries(kind);
    if (missing) {
      const required = values.db !== undefined || isRequired(kind);
      const line = `${required ? 'FAILED' : 'SKIPPED'} chaos (${kind}): ${missing}`;
      console.error(`\n!!! ${line}\n`);
      return { kind, skipped: !required, error: required ? missing : null, audit: null, aborted: null, seconds: 0, kept: null };
    }
  }
  const dir = mkdtempSync(path.join(tmpdir(), `leasehold-chaos-${kind}-run-`));
  currentDir = dir;
  const settings: ChaosSettings = {
    jobs,
    workers,
    concurrency,
    leaseMs,
    events: { kill: 10, zombie: 5, connkill: kind === 'sqlite' ? 0 : 3, restart: kind === 'sqlite' ? 0 : 1 },
    stallMs: Math.max(60_000, leaseMs * 20),
    log,
  };
  let result: DbResult;
  try {
    current = await openChaosDb(kind, dir);
    log(`database ready${current.server ? ` (throwaway server on port ${current.server.port})` : ''}`);
    const out = await runChaos(current, dir, settings);
    const a: Audit = audit(kind, out);
    result = { kind, skipped: false, error: null, audit: a, aborted: out.aborted, seconds: (Date.now() - startedAt) / 1000, kept: null };
  } catch (e) {
    const serverLog = current?.serverDir ? `\n${kind} server log:\n${serverLogTail(current.serverDir)}` : '';
    result = { kind, skipped: false, error: `${(e as Error).stack ?? String(e)}${serverLog}`, audit: null, aborted: null, seconds: (Date.now() - startedAt) / 1000, kept: null };
  } finally {
    await cleanUp();
  }
  currentDir = null;
  // a failed run keeps its database file (SQLite), ledger and gate for a closer look
  if (result.error || (result.audit && failed(result.audit, result.aborted))) result.kept = dir;
  else rmSync(dir, { recursive: true, force: true });
  return result;
}

const results: DbResult[] = [];
for (const kind of kinds) results.push(await runOne(kind));
const ok = printTable(results, { jobs, workers, concurrency, leaseMs });
process.exit(ok ? 0 : 1);
