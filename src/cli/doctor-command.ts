/**
 * `leasehold doctor`: gathers what the database says (schema, indexes, clock, leases, due
 * jobs without a worker, dead jobs, long attempts, retention backlog, table sizes, settings),
 * lets core/doctor.ts judge it, prints each finding with what to do, and exits 0 when nothing
 * is wrong, DOCTOR_EXIT.warning when something deserves a look, DOCTOR_EXIT.error when a
 * guarantee or the schema is broken (1 when the database cannot be asked at all).
 *
 * LEASEHOLD_DOCTOR_CLOCK_OFFSET_MS (tests only) shifts doctor's reading of this host's clock,
 * so a test can show a skew without changing the machine's time.
 */
import type { Command } from 'commander';
import { DOCTOR_LIMITS, type DoctorFacts, type Finding, diagnose, verdict } from '../core/doctor.js';
import type { Storage } from '../core/storage.js';
import { findUnhandled } from '../runtime/client.js';
import { Retention } from '../runtime/retention.js';
import { withStorage } from './main.js';
import { type RetentionFlags, addRetentionAgeOptions, retentionFrom } from './retention-options.js';
import { terminalSafe } from './format.js';

export const DOCTOR_EXIT = { warning: 5, error: 6 } as const;

/** Thrown by doctor after it printed its findings: the exit code says how bad they are. */
export class DoctorVerdict extends Error {
  constructor(readonly exitCode: number) {
    super(`doctor found problems (exit ${exitCode})`);
  }
}

const DAY = 86_400_000;
/** rows read per listing (dead jobs, running attempts) and expired leases looked at */
const PAGE = 500;
const LEASES_READ = 20;
/** a worker silent this long is not live (the sweeper's default) */
const ALIVE_WITHIN_MS = 60_000;

function hostClock(): () => number {
  const offset = Number(process.env.LEASEHOLD_DOCTOR_CLOCK_OFFSET_MS ?? 0);
  return () => Date.now() + (Number.isFinite(offset) ? offset : 0);
}

/** Every fact doctor judges; a check whose reads fail is reported as failed, the others still run. */
async function gather(storage: Storage, flags: RetentionFlags): Promise<DoctorFacts> {
  const failed: { check: string; message: string }[] = [];
  const facts: DoctorFacts = { dialect: storage.dialect, schemaVersion: await storage.schemaVersion(), expectedSchemaVersion: storage.expectedSchemaVersion, failed };
  // without tables there is nothing else to ask
  if (facts.schemaVersion === 0) return facts;
  const read = async <T>(check: string, fn: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await fn();
    } catch (e) {
      failed.push({ check, message: (e as Error).message });
      return undefined;
    }
  };
  facts.storage = await read('indexes', () => storage.diagnostics.inspect());
  const host = hostClock();
  const before = host();
  const now = await storage.now();
  const after = host();
  facts.clock = { hostMs: (before + after) / 2, databaseMs: now.getTime(), roundTripMs: after - before };
  const nowMs = now.getTime();
  facts.expiredLeases = await read('leases', async () => {
    const expired = await storage.leases.findExpired({ limit: LEASES_READ });
    const rows = await Promise.all(expired.map((e) => storage.jobs.get({ id: e.id })));
    return expired.map((e, i) => ({ id: e.id, type: e.type, lockedBy: e.lockedBy, expiredForMs: nowMs - (rows[i]?.lockedUntil?.getTime() ?? nowMs) }));
  });
  facts.unhandled = await read('unhandled', async () => {
    const [due, workers] = await Promise.all([storage.queues.dueCounts(), storage.workers.list()]);
    facts.unhandledComplete = due.complete;
    return findUnhandled(due.counts, workers, now, ALIVE_WITHIN_MS).map((u) => ({ ...u, capped: !due.complete }));
  });
  facts.deadRecently = await read('dead', async () => {
    const byType = new Map<string, number>();
    for (const j of await storage.jobs.list({ status: 'dead', limit: PAGE })) {
      if (j.finishedAt && nowMs - j.finishedAt.getTime() <= DAY) byType.set(j.type, (byType.get(j.type) ?? 0) + 1);
    }
    return [...byType].map(([type, count]) => ({ type, count }));
  });
  facts.running = await read('long-running', async () =>
    (await storage.jobs.list({ status: 'running', limit: PAGE })).map((j) => ({ id: j.id, type: j.type, runningForMs: nowMs - (j.startedAt?.getTime() ?? nowMs), maxRuntimeMs: j.maxRuntimeMs })),
  );
  facts.pastRetention = await read('retention', async () => {
    const rules = new Retention(storage, retentionFrom(flags)).rules;
    return Promise.all(rules.map(async (r) => ({
      status: r.status, retentionMs: r.olderThanMs,
      count: await storage.diagnostics.prunable({ statuses: [r.status], olderThanMs: r.olderThanMs }),
      overdue: await storage.diagnostics.prunable({ statuses: [r.status], olderThanMs: r.olderThanMs + DAY }),
    })));
  });
  return facts;
}

const LABEL: Record<Finding['severity'], string> = { ok: 'ok', info: 'info', warning: 'WARNING', error: 'ERROR' };

export function report(facts: DoctorFacts, findings: Finding[]): string {
  const pad = ' '.repeat(25);
  const lines = [`leasehold doctor: ${terminalSafe(facts.dialect)}, schema ${facts.schemaVersion} (this leasehold: ${facts.expectedSchemaVersion})`, ''];
  for (const f of findings) {
    lines.push(`  ${LABEL[f.severity].padEnd(8)} ${f.check.padEnd(13)} ${terminalSafe(f.summary)}`);
    for (const d of f.details) lines.push(`${pad}- ${terminalSafe(d)}`);
    if (f.fix) lines.push(`${pad}fix: ${terminalSafe(f.fix)}`);
  }
  const n = (s: Finding['severity']) => findings.filter((f) => f.severity === s).length;
  lines.push('', n('error') + n('warning') === 0 ? 'nothing wrong' : `${n('error')} error(s), ${n('warning')} warning(s)`);
  return lines.join('\n');
}

export function registerDoctorCommand(program: Command): void {
  addRetentionAgeOptions(
    program
      .command('doctor')
      .description(`check the database and this host: schema, indexes, clock, leases, unhandled and dead jobs, retention, settings (exit ${DOCTOR_EXIT.warning}: warnings, ${DOCTOR_EXIT.error}: errors)`),
  )
    .option('--json', 'print JSON')
    .action(async (o: RetentionFlags & { json?: boolean }, cmd: Command) => {
      const exitCode = await withStorage(cmd, async (storage) => {
        const facts = await gather(storage, o);
        const findings = diagnose(facts);
        const worst = verdict(findings);
        const code = worst === 'ok' ? 0 : DOCTOR_EXIT[worst];
        const json = { dialect: facts.dialect, schemaVersion: facts.schemaVersion, expectedSchemaVersion: facts.expectedSchemaVersion, verdict: worst, exitCode: code, limits: DOCTOR_LIMITS, findings };
        process.stdout.write(`${o.json ? JSON.stringify(json, null, 2) : report(facts, findings)}\n`);
        return code;
      });
      if (exitCode !== 0) throw new DoctorVerdict(exitCode);
    });
}
