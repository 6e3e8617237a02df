/**
 * The chaos run's figures table, one row per database, then every finding and note. Returns
 * whether every database passed.
 */
import type { Audit } from './audit.js';
import { failed } from './audit.js';
import type { DbKind } from './db.js';

export interface DbResult {
  kind: DbKind;
  skipped: boolean;
  /** the run could not be carried out (setup failed, a server missing when required) */
  error: string | null;
  audit: Audit | null;
  aborted: string | null;
  seconds: number;
  /** the run dir kept for a closer look */
  kept: string | null;
}

const COLUMNS = [
  'db',
  'jobs',
  'kills',
  'zombies',
  'conn kills (conns)',
  'restarts',
  'lost',
  'stuck',
  'overlapping leases',
  'dup: worker died after fn ran',
  'dup: other',
  'history gaps',
  'crashes',
  'seconds',
  'result',
];

function row(r: DbResult): string[] {
  const verdict = r.skipped ? 'SKIPPED' : r.error ? 'ERROR' : r.audit && failed(r.audit, r.aborted) ? 'FAIL' : 'ok';
  const f = r.audit?.figures;
  if (!f) return [r.kind, ...COLUMNS.slice(1, -2).map(() => '-'), r.seconds.toFixed(0), verdict];
  return [
    r.kind,
    String(f.jobs),
    String(f.kills),
    String(f.zombies),
    f.connKills ? `${f.connKills.rounds} (${f.connKills.connections})` : 'n/a',
    f.restarts === null ? 'n/a' : String(f.restarts),
    String(f.lost),
    String(f.stuck),
    String(f.overlaps),
    String(f.dupDied),
    String(f.dupOther),
    String(f.history),
    String(f.crashes),
    r.seconds.toFixed(0),
    verdict,
  ];
}

/** Print the table and the details; true when every database that ran passed (and none errored). */
export function printTable(results: DbResult[], s: { jobs: number; workers: number; concurrency: number; leaseMs: number }): boolean {
  const rows = [COLUMNS, ...results.map(row)];
  const widths = COLUMNS.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => `| ${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const out: string[] = [];
  out.push('', `== chaos: ${s.jobs} jobs per database, ${s.workers} worker processes × concurrency ${s.concurrency}, lease ${s.leaseMs} ms ==`);
  out.push(line(rows[0]!), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.slice(1).map(line));
  for (const r of results) {
    if (r.error) out.push('', `${r.kind}: ERROR ${r.error}`);
    if (r.aborted) out.push('', `${r.kind}: the event plan was cut short: ${r.aborted}`);
    if (r.audit?.findings.length) out.push('', `${r.kind}: ${r.audit.findings.length} finding(s):`, ...r.audit.findings.slice(0, 30).map((x) => `  ${x}`));
    if (r.audit && r.audit.findings.length > 30) out.push(`  … and ${r.audit.findings.length - 30} more`);
    if (r.audit?.notes.length) out.push('', `${r.kind}: notes:`, ...r.audit.notes.slice(0, 30).map((x) => `  ${x}`));
    if (r.kept) out.push(`${r.kind}: run dir kept at ${r.kept}`);
  }
  const ok = results.every((r) => r.skipped || (!r.error && r.audit && !failed(r.audit, r.aborted)));
  out.push('', ok ? 'chaos: PASS' : 'chaos: FAIL');
  console.log(out.join('\n'));
  return ok;
}
