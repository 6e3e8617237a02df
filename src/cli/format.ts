/** Plain-text tables and job details for the terminal; `--json` bypasses all of this. */
import type { AttemptRow, JobRow } from '../core/storage.js';

/** Control characters (C0, DEL, C1) and bidi overrides from the database, made visible instead of obeyed by the terminal. */
export function terminalSafe(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).replace(/\n/g, '\\n');
}

export function table(headers: string[], rows: (string | number | null)[][]): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === null ? '-' : terminalSafe(String(c)))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) => r.map((c, i) => (c ?? '').padEnd(widths[i] ?? 0)).join('  ').trimEnd()).join('\n');
}

export function iso(d: Date | null): string | null {
  if (!d) return null;
  // a row from before times were range-checked can hold one JavaScript cannot: show it, do not fail
  return Number.isNaN(d.getTime()) ? 'invalid date' : d.toISOString();
}

export function jobsTable(jobs: JobRow[]): string {
  return table(
    ['ID', 'TYPE', 'QUEUE', 'STATUS', 'ATTEMPTS', 'RUN AT', 'LAST ERROR'],
    jobs.map((j) => [j.id, j.type, j.queue, j.status, `${j.attempts}/${j.maxAttempts}`, iso(j.runAt), j.lastError ? j.lastError.slice(0, 60) : null]),
  );
}

export function jobDetail(job: JobRow, attempts: AttemptRow[]): string {
  const fields: [string, unknown][] = [
    ['id', job.id], ['type', job.type], ['queue', job.queue], ['status', job.status], ['priority', job.priority],
    ['attempts', `${job.attempts}/${job.maxAttempts}`], ['run at', iso(job.runAt)], ['idempotency key', job.idempotencyKey],
    ['locked by', job.lockedBy], ['locked until', iso(job.lockedUntil)], ['started', iso(job.startedAt)], ['finished', iso(job.finishedAt)],
    ['last error', job.lastErrorCode ? `${job.lastErrorCode}: ${job.lastError ?? ''}` : null], ['timeout', `${job.timeoutMs} ms`],
    ['max runtime', `${job.maxRuntimeMs} ms`], ['created', iso(job.createdAt)], ['payload', JSON.stringify(job.payload)],
    ['progress', job.progress ? `${JSON.stringify(job.progress.value)}${job.progress.note === null ? '' : ` (${job.progress.note})`} at ${iso(job.progress.at)}` : null],
    ['result', job.result === undefined ? null : JSON.stringify(job.result)],
    ['waits for', job.status !== 'waiting' || job.pendingParents === undefined ? null : `${job.pendingParents} parent job(s) not succeeded yet`], ['batch', job.batchId ?? null],
  ];
  const head = fields.map(([k, v]) => `${k.padEnd(16)} ${v === null || v === undefined ? '-' : terminalSafe(String(v))}`).join('\n');
  const hist = table(
    ['#', 'WORKER', 'STARTED', 'DURATION', 'OUTCOME', 'ERROR', 'RETRY IN'],
    attempts.map((a) => [a.attempt, a.workerId, iso(a.startedAt), a.durationMs === null ? null : `${a.durationMs} ms`, a.outcome,
      a.errorCode ? `${a.errorCode}: ${(a.errorMessage ?? '').slice(0, 50)}` : null, a.retryDelayMs === null ? null : `${a.retryDelayMs} ms`]),
  );
  return `${head}\n\nattempts:\n${hist}`;
}
