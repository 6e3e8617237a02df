/**
 * Finishing jobs on PostgreSQL: a batch of outcomes in one statement, on the pool or on the
 * caller's transaction client. A batch of plain successes takes the lighter `finish_succeeded`,
 * naming the worker when this storage made all their claims (postgres-claim-bases.ts); any other
 * batch `finish_jobs` (all in postgres-functions.ts). PostgresStorage delegates.
 */
import type { FinishParams, FinishResult } from '../../core/storage.js';
import type { ClaimBases } from './postgres-claim-bases.js';
import { query, type Prepared } from './postgres-db.js';
import { safeText, validId, type Queryable, type Row } from './postgres-rows.js';

export interface FinishStatements {
  finish: Prepared;
  finishSucceeded: Prepared;
  finishSucceededBy: Prepared;
}

/**
 * The database refusing the named finish itself: undefined_function (a schema before 8) and
 * insufficient_privilege (a role granted only the functions it had before). Either way the
 * statement landed nothing, and the two-argument finish can do the same work.
 */
const NO_NAMED_FINISH = new Set(['42883', '42501']);

/**
 * `notify`: the NOTIFY channel and payload (the schema) for the wake-up of jobs due again now.
 * `bases`: this storage's claims, to name the worker of a batch of successes; not given inside
 * a caller's transaction, which one refused statement would abort.
 */
export async function finishJobs(on: Queryable, hot: FinishStatements, bases: ClaimBases | undefined, params: readonly FinishParams[], notify: [string, string]): Promise<FinishResult[]> {
  const items = params.filter((f) => validId(f.id) !== null);
  const applied = new Map<FinishParams, boolean>();
  if (items.length > 0 && items.every(plainSuccess)) {
    const rows = await finishSucceeded(on, hot, bases, items.map((f) => validId(f.id)), items.map((f) => f.leaseToken));
    for (const r of rows) applied.set(items[Number(r.ord) - 1] as FinishParams, true);
  } else if (items.length > 0) {
    // Optional columns go as [] when no item has a value: unnest pads a shorter array with
    // NULLs, which the statement reads as "none" / false.
    const opt = <T>(f: (x: FinishParams) => T | null | undefined): (T | null)[] => {
      const out = items.map((x) => f(x) ?? null);
      return out.some((v) => v !== null && v !== false) ? out : [];
    };
    const args = [
      items.map((f) => validId(f.id)), items.map((f) => f.leaseToken), items.map((f) => f.status),
      opt((f) => f.runAfterMs ?? null), opt((f) => f.uncountAttempt === true),
      opt((f) => f.error != null), opt((f) => safeText(f.error?.code)), opt((f) => safeText(f.error?.message)),
      items.map((f) => f.attempt.outcome), opt((f) => safeText(f.attempt.error?.code)),
      opt((f) => safeText(f.attempt.error?.message)), opt((f) => safeText(f.attempt.error?.stack)),
      opt((f) => f.attempt.retryDelayMs ?? null), opt((f) => f.onlyIfExpired === true),
      ...notify,
    ];
    const rows = await query(on, 'finishJobs', hot.finish, args);
    for (const r of rows) applied.set(items[Number(r.ord) - 1] as FinishParams, true);
  }
  return params.map((f) => ({ id: f.id, applied: applied.get(f) ?? false }));
}

/**
 * A batch of successes: named for their worker where `bases` knows it, else read back. A
 * database still at schema 7 (new workers run before `migrate`) has no named finish: it refuses
 * the call without landing anything, and from then on, until the storage is made anew (a
 * worker restart, as an upgrade asks for anyway), the batches are read back.
 */
async function finishSucceeded(on: Queryable, hot: FinishStatements, bases: ClaimBases | undefined, ids: unknown[], tokens: string[]): Promise<Row[]> {
  const worker = bases?.workerOf(tokens);
  if (bases && worker !== undefined) {
    try {
      return await query(on, 'finishJobs', hot.finishSucceededBy, [ids, tokens, worker]);
    } catch (e) {
      if (!NO_NAMED_FINISH.has(String((e as { cause?: { code?: unknown } }).cause?.code))) throw e;
      bases.unnamed();
    }
  }
  return query(on, 'finishJobs', hot.finishSucceeded, [ids, tokens]);
}

/** A finish that `finish_succeeded` lands exactly as `finish_jobs` would: a success and nothing else. */
function plainSuccess(f: FinishParams): boolean {
  return (
    f.status === 'succeeded' && f.attempt.outcome === 'succeeded' && f.attempt.error == null && f.attempt.retryDelayMs == null &&
    f.error == null && f.runAfterMs == null && f.uncountAttempt !== true && f.onlyIfExpired !== true
  );
}
