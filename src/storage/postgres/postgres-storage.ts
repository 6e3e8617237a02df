/**
 * The PostgreSQL storage adapter on node-postgres. Every write is one statement (claims,
 * finishes, heartbeats and inserts are batched through unnest arrays and data-modifying CTEs),
 * so it is atomic without an explicit transaction. Two operations use a transaction of their
 * own: `migrate()` (under an advisory lock) and `cancelJob()` (lock the row first, so a claim
 * committing meanwhile has its attempt row closed too). `insertJobs` and `finishJobs` accept
 * `{ tx }`: the caller's own `pg.PoolClient`/`pg.Client` inside their transaction, used as is
 * (no BEGIN/COMMIT of ours), so the job exists, or the finish lands, iff their transaction
 * commits. Enqueues, retries and finishes that make a job due now send
 * `pg_notify(NOTIFY_CHANNEL, schema)` in the same transaction, delivered on commit;
 * `subscribe()` listens for them on a dedicated connection (postgres-listener.ts).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { LeaseholdError, SchemaTooNewError, TransientStorageError, ValidationError } from '../../core/errors.js';
import type {
  AttemptRow, Capabilities, ClaimedJob, ClaimParams, EffectParams, EffectReservation, EffectRow,
  ExpiredLease, FinishParams, FinishResult, HeartbeatParams, HeartbeatResult, InsertResult, JobCount, LeaseRef,
  JobQuery, JobRow, MigrateResult, NewJob, PruneParams, Storage, WorkerInfo, WorkerRow,
} from '../../core/storage.js';
import type { JobStatus } from '../../core/status.js';
import { prepared, query, transaction } from './postgres-db.js';
import { fastTypes } from './postgres-types.js';
import type { Prepared } from './postgres-db.js';
import { NOTIFY_CHANNEL, PgListener } from './postgres-listener.js';
import { POSTGRES_MIGRATIONS, POSTGRES_SCHEMA_VERSION } from './postgres-migrations.js';
import { jsonParam, quoteSchema, safeText, toAttemptRow, toClaimedJob, toEffectRow, toExpiredLease, toJobCount, toJobRow, toWorkerRow, txClient, validId, type Queryable, type Row } from './postgres-rows.js';
import { adminSql, migrationSql } from './postgres-sql-admin.js';
import { insertSql } from './postgres-sql-insert.js';
import { jobsSql } from './postgres-sql-jobs.js';
import { insertJobs, type InsertContext } from './postgres-insert.js';
import * as sched from './postgres-schedules.js';
import type { AcquireLockParams, FireScheduleParams, FireScheduleResult, LockGrant, LockRow, ScheduledJob, ScheduleRow, ScheduleUpsert } from '../../core/schedules.js';

export { NOTIFY_CHANNEL };



export interface PostgresStorageOptions {
  /** e.g. postgres://user@host:5432/db; ignored when `pool` is given */
  connectionString?: string;
  /** your own pool; `close()` leaves it open */
  pool?: pg.Pool;
  /** schema holding leasehold's tables; default 'leasehold'; must match /^[a-z_][a-z0-9_]*$/ */
  schema?: string;
  /** size of the pool this adapter creates (default 10); follow the worker's concurrency */
  poolSize?: number;
}

export class PostgresStorage implements Storage {
  readonly dialect = 'postgres';
  readonly capabilities: Capabilities = { multiProcess: true, transactionalEnqueue: true, listenNotify: true };
  readonly schema: string;
  readonly pool: pg.Pool;
  private readonly ownsPool: boolean;
  /** The job statements; the hot ones also prepared (their functions: postgres-functions.ts). */
  private readonly sql: ReturnType<typeof jobsSql>;
  private readonly hot: { claim: Prepared; heartbeat: Prepared; finish: Prepared; finishSucceeded: Prepared };
  private readonly inserts: InsertContext;
  private readonly admin: ReturnType<typeof adminSql>;
  private readonly mig: ReturnType<typeof migrationSql>;
  private readonly sch: ReturnType<typeof sched.schedulesSql>;
  private closing: Promise<void> | null = null;
  private listener: PgListener | null = null;

  constructor(opts: PostgresStorageOptions = {}) {
    this.schema = opts.schema ?? 'leasehold';
    const q = quoteSchema(this.schema);
    const jobs = jobsSql(q);
    this.sql = jobs;
    this.hot = { claim: prepared(jobs.claimCall, 'array'), heartbeat: prepared(jobs.heartbeatCall), finish: prepared(jobs.finishCall), finishSucceeded: prepared(jobs.finishSucceededCall) };
    const ins = insertSql(q);
    this.inserts = {
      run: (what, text, params, on) => this.run(what, text, params, on),
      sql: ins,
      hot: { insertOne: prepared(ins.insertOne), insertRun: prepared(ins.insertRun), insertPlain: prepared(ins.insertPlain) },
      notify: [NOTIFY_CHANNEL, this.schema],
    };
    this.admin = adminSql(q);
    this.mig = migrationSql(q);
    this.sch = sched.schedulesSql(q);
    if (opts.pool) {
      this.pool = opts.pool;
      this.ownsPool = false;
    } else {
      if (!opts.connectionString) throw new ValidationError('INVALID_OPTION', 'postgresStorage needs a connectionString or a pool');
      this.pool = new pg.Pool({ connectionString: opts.connectionString, max: opts.poolSize ?? 10, application_name: 'leasehold', types: fastTypes });
      // An idle client whose connection drops emits 'error' on the pool; without a listener that
      // would crash the process. The next query gets a fresh connection (or a classified error).
      this.pool.on('error', () => {});
      this.ownsPool = true;
    }
  }

  private run(what: string, text: string | Prepared, params: unknown[] = [], on?: Queryable): Promise<Row[]> {
    return query(on ?? this.pool, what, text, params);
  }


  async migrate(): Promise<MigrateResult> {
    return transaction(this.pool, 'migrate', async (c) => {
      const server = Number((await c.query(this.mig.serverVersion)).rows[0]?.v ?? 0);
      if (server < 130000) throw new LeaseholdError('UNSUPPORTED_SERVER', `PostgreSQL ${server} is too old: leasehold needs 13 or newer (gen_random_uuid)`);
      await c.query(this.mig.lock, [`leasehold.migrate.${this.schema}`]);
      await c.query(this.mig.createSchema);
      await c.query(this.mig.createLedger);
      const from = Number((await c.query(this.mig.maxVersion)).rows[0]?.version ?? 0);
      if (from > POSTGRES_SCHEMA_VERSION) throw new SchemaTooNewError(from, POSTGRES_SCHEMA_VERSION);
      const applied: MigrateResult['applied'] = [];
      for (const m of POSTGRES_MIGRATIONS.filter((x) => x.version > from)) {
        await c.query(m.sql(quoteSchema(this.schema)));
        await c.query(this.mig.record, [m.version, m.name]);
        applied.push({ version: m.version, name: m.name });
      }
      return { from, to: Math.max(from, ...applied.map((a) => a.version)), applied };
    });
  }

  async schemaVersion(): Promise<number> {
    const [row] = await this.run('schemaVersion', this.mig.ledgerExists, [`${quoteSchema(this.schema)}.migrations`]);
    if (!row?.present) return 0;
    const [v] = await this.run('schemaVersion', this.mig.maxVersion);
    return Number(v?.version ?? 0);
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.listener?.stop();
      if (this.ownsPool) await this.pool.end();
    })();
    return this.closing;
  }

  /** Wake-ups over LISTEN on a dedicated connection (same settings as the pool's). */
  subscribe(onWake: () => void): Promise<() => Promise<void>> {
    const config = (this.pool as unknown as { options: pg.ClientConfig }).options;
    this.listener ??= new PgListener({ ...config, application_name: `${config.application_name ?? 'leasehold'}-listener` }, this.schema);
    return this.listener.subscribe(onWake);
  }

  async now(): Promise<Date> {
    const [row] = await this.run('now', this.admin.now);
    return row?.now as Date;
  }

  // --- jobs -------------------------------------------------------------------------------

  async insertJobs(jobs: readonly NewJob[], opts?: { tx?: unknown }): Promise<InsertResult[]> {
    return insertJobs(this.inserts, jobs, txClient(opts?.tx));
  }

  async claimJobs(p: ClaimParams): Promise<ClaimedJob[]> {
    if (p.limit <= 0 || p.types.length === 0) return [];
    // a fresh base per claim; each job's token is the base and its id (see claimWithBase).
    // 128 bits in base64url: 22 characters where hex took 32, and a token is written three
    // times per job (the claimed row, the attempt row and its key)
    const base = randomBytes(16).toString('base64url');
    const params = [p.workerId, [...p.types], p.queues ? [...p.queues] : null, p.limit, p.leaseMs, base];
    const rows = (await this.run('claimJobs', this.hot.claim, params)) as unknown as unknown[][];
    return rows.map((r) => toClaimedJob(r, p.workerId, base));
  }

  async heartbeat(p: HeartbeatParams): Promise<HeartbeatResult> {
    const valid = p.leases.filter((l) => validId(l.id) !== null);
    const lost = new Set<LeaseRef>(p.leases.filter((l) => validId(l.id) === null));
    const status = new Map<string, JobStatus>();
    if (valid.length > 0) {
      const rows = await this.run('heartbeat', this.hot.heartbeat, [valid.map((l) => validId(l.id)), valid.map((l) => l.leaseToken), p.leaseMs]);
      const extended = new Set(rows.map((r) => Number(r.ord) - 1));
      const lostValid = valid.filter((_, i) => !extended.has(i));
      for (const l of lostValid) lost.add(l);
      if (lostValid.length > 0) {
        for (const r of await this.run('heartbeat', this.sql.statuses, [lostValid.map((l) => validId(l.id))])) status.set(String(r.id), r.status as JobStatus);
      }
    }
    // in input order; a job that is gone reports null
    return { lost: p.leases.filter((l) => lost.has(l)).map((l) => ({ id: l.id, status: status.get(validId(l.id) ?? '') ?? null })) };
  }

  async finishJobs(params: readonly FinishParams[], opts?: { tx?: unknown }): Promise<FinishResult[]> {
    const on = txClient(opts?.tx);
    const items = params.filter((f) => validId(f.id) !== null);
    const applied = new Map<FinishParams, boolean>();
    if (items.length > 0 && items.every(plainSuccess)) {
      const rows = await this.run('finishJobs', this.hot.finishSucceeded, [items.map((f) => validId(f.id)), items.map((f) => f.leaseToken)], on);
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
        NOTIFY_CHANNEL, this.schema,
      ];
      const rows = await this.run('finishJobs', this.hot.finish, args, on);
      for (const r of rows) applied.set(items[Number(r.ord) - 1] as FinishParams, true);
    }
    return params.map((f) => ({ id: f.id, applied: applied.get(f) ?? false }));
  }

  async findExpiredLeases(p: { limit: number }): Promise<ExpiredLease[]> {
    if (p.limit <= 0) return [];
    const rows = await this.run('findExpiredLeases', this.sql.findExpired, [p.limit]);
    return rows.map(toExpiredLease);
  }

  async getJob(id: string): Promise<JobRow | null> {
    const v = validId(id);
    if (v === null) return null;
    const [row] = await this.run('getJob', this.admin.getJob, [v]);
    return row ? toJobRow(row) : null;
  }

  async listJobs(q: JobQuery): Promise<JobRow[]> {
    let before: string | null = null;
    if (q.beforeId !== undefined) {
      before = validId(q.beforeId);
      if (before === null) throw new ValidationError('INVALID_OPTION', `beforeId must be a job id, got "${q.beforeId}"`);
    }
    if (q.limit <= 0) return [];
    const rows = await this.run('listJobs', this.admin.listJobs, [q.status ?? null, q.queue ?? null, q.type ?? null, before, q.limit]);
    return rows.map(toJobRow);
  }

  async countJobs(): Promise<JobCount[]> {
    const rows = await this.run('countJobs', this.admin.countJobs);
    return rows.map(toJobCount);
  }

  async listAttempts(jobId: string): Promise<AttemptRow[]> {
    const v = validId(jobId);
    if (v === null) return [];
    return (await this.run('listAttempts', this.admin.listAttempts, [v])).map(toAttemptRow);
  }

  async retryJob(id: string): Promise<{ job: JobRow | null; applied: boolean }> {
    const v = validId(id);
    if (v === null) return { job: null, applied: false };
    const [row] = await this.run('retryJob', this.admin.retryJob, [v, NOTIFY_CHANNEL, this.schema]);
    return row ? { job: toJobRow(row), applied: row.applied === true } : { job: null, applied: false };
  }

  async cancelJob(id: string): Promise<{ job: JobRow | null; applied: boolean }> {
    const v = validId(id);
    if (v === null) return { job: null, applied: false };
    return transaction(this.pool, 'cancelJob', async (c) => {
      const [locked] = await this.run('cancelJob', this.admin.lockJob, [v], c);
      if (!locked) return { job: null, applied: false };
      const [row] = await this.run('cancelJob', this.admin.cancelJob, [v, 'cancelled by an operator', locked.lease_token ?? null], c);
      return row ? { job: toJobRow(row), applied: row.applied === true } : { job: null, applied: false };
    });
  }

  async pruneJobs(p: PruneParams): Promise<number> {
    if (p.limit <= 0 || p.statuses.length === 0) return 0;
    const [row] = await this.run('pruneJobs', this.admin.pruneJobs, [[...p.statuses], p.olderThanMs, p.limit]);
    return Number(row?.n ?? 0);
  }

  // --- effect ledger ------------------------------------------------------------------------

  async reserveEffect(p: EffectParams): Promise<EffectReservation> {
    const jobId = validId(p.jobId);
    if (jobId === null) return { state: 'lost' };
    for (let tries = 0; tries < 5; tries++) {
      const [r] = await this.run('reserveEffect', this.admin.reserveEffect, [p.key, jobId, p.leaseToken]);
      if (!r?.held) return { state: 'lost' };
      if (r.reserved) return { state: 'reserved' };
      const [e] = await this.run('reserveEffect', this.admin.getEffect, [p.key]);
      if (e?.state === 'done') return { state: 'done', result: e.result ?? null };
      // pending under another job that still runs under its lease: that attempt may be doing it
      if (e?.state === 'pending') return { state: 'busy' };
    }
    throw new TransientStorageError(`postgres: effect "${p.key}" kept changing during reserveEffect; retry`);
  }

  async completeEffect(p: EffectParams & { result: unknown }): Promise<boolean> {
    const jobId = validId(p.jobId);
    if (jobId === null) return false;
    return (await this.run('completeEffect', this.admin.completeEffect, [p.key, jobId, p.leaseToken, jsonParam(p.result)])).length > 0;
  }

  async listEffects(p: { jobId?: string; limit: number }): Promise<EffectRow[]> {
    const jobId = p.jobId === undefined ? null : validId(p.jobId);
    if ((p.jobId !== undefined && jobId === null) || p.limit <= 0) return [];
    return (await this.run('listEffects', this.admin.listEffects, [jobId, p.limit])).map(toEffectRow);
  }

  async countEffects(): Promise<number> {
    const [row] = await this.run('countEffects', this.admin.countEffects);
    return Number(row?.n ?? 0);
  }

  // --- workers ------------------------------------------------------------------------------

  async registerWorker(w: WorkerInfo): Promise<void> {
    await this.run('registerWorker', this.admin.registerWorker, [w.id, w.host, w.pid, w.version, w.queues ? JSON.stringify(w.queues) : null, JSON.stringify(w.types)]);
  }

  async heartbeatWorker(id: string): Promise<void> {
    await this.run('heartbeatWorker', this.admin.heartbeatWorker, [id]);
  }

  async removeWorker(id: string): Promise<void> {
    await this.run('removeWorker', this.admin.removeWorker, [id]);
  }

  async listWorkers(): Promise<WorkerRow[]> {
    return (await this.run('listWorkers', this.admin.listWorkers)).map(toWorkerRow);
  }

  async pruneWorkers(p: { silentForMs: number }): Promise<number> {
    const [row] = await this.run('pruneWorkers', this.admin.pruneWorkers, [p.silentForMs]);
    return Number(row?.n ?? 0);
  }

  // --- schedules and locks: see postgres-schedules.ts ---------------------------------------
  upsertSchedules(items: readonly ScheduleUpsert[]): Promise<ScheduleRow[]> { return sched.upsertSchedules(this.pool, this.sch, items); }
  syncSchedules(items: readonly ScheduleUpsert[]): Promise<{ schedules: ScheduleRow[]; removed: string[] }> { return sched.syncSchedules(this.pool, this.sch, items); }
  async getSchedule(name: string): Promise<ScheduleRow | null> { const [r] = await this.run('getSchedule', this.sch.get, [name]); return r ? sched.toScheduleRow(r) : null; }
  async listSchedules(): Promise<ScheduleRow[]> { return (await this.run('listSchedules', this.sch.list)).map(sched.toScheduleRow); }
  async removeSchedule(name: string): Promise<boolean> { return (await this.run('removeSchedule', this.sch.remove, [name])).length > 0; }
  async setScheduleEnabled(p: { name: string; enabled: boolean; nextRunAt?: Date | null }): Promise<ScheduleRow | null> {
    const [r] = await this.run('setScheduleEnabled', this.sch.setEnabled, [p.name, p.enabled, p.nextRunAt !== undefined, p.nextRunAt ?? null]);
    return r ? sched.toScheduleRow(r) : null;
  }
  async dueSchedules(p: { limit: number }): Promise<ScheduleRow[]> { return (await this.run('dueSchedules', this.sch.due, [p.limit])).map(sched.toScheduleRow); }
  fireSchedule(p: FireScheduleParams): Promise<FireScheduleResult> { return sched.fireSchedule(this.pool, this.sch, p, [NOTIFY_CHANNEL, this.schema]); }
  runScheduleNow(p: { name: string; job: ScheduledJob }): Promise<JobRow | null> { return sched.runScheduleNow(this.pool, this.sch, p, [NOTIFY_CHANNEL, this.schema]); }
  tryAcquireLock(p: AcquireLockParams): Promise<LockGrant | null> { return sched.tryAcquireLock(this.pool, this.sch, p); }
  async extendLock(p: { name: string; token: string; ttlMs: number }): Promise<boolean> { return (await this.run('extendLock', this.sch.extend, [p.name, p.token, p.ttlMs])).length > 0; }
  async releaseLock(p: { name: string; token: string }): Promise<boolean> { return (await this.run('releaseLock', this.sch.release, [p.name, p.token])).length > 0; }
  async listLocks(p: { name?: string } = {}): Promise<LockRow[]> { return (await this.run('listLocks', this.sch.listLocks, [p.name ?? null])).map(sched.toLockRow); }
}

/** Create a PostgreSQL storage from a connection string or your own pool. */
export function postgresStorage(opts: PostgresStorageOptions): PostgresStorage {
  return new PostgresStorage(opts);
}

/** A finish that `finish_succeeded` lands exactly as `finish_jobs` would: a success and nothing else. */
function plainSuccess(f: FinishParams): boolean {
  return (
    f.status === 'succeeded' && f.attempt.outcome === 'succeeded' && f.attempt.error == null && f.attempt.retryDelayMs == null &&
    f.error == null && f.runAfterMs == null && f.uncountAttempt !== true && f.onlyIfExpired !== true
  );
}
