/**
 * Distributed locks and semaphores (semantics: the header of src/core/schedules.ts). A per-name
 * counter row (slot -1) is locked FOR UPDATE first, which serialises acquirers of one name; lock
 * times use clock_timestamp() (not the transaction's start time), so a wait for that row lock
 * never shortens a TTL or revives an expired holding.
 */
import type { AcquireLockParams, LockGrant, LockRow } from '../../core/schedules.js';
import { checkLockSlots } from '../../core/schedules.js';
import type { LockStore } from '../../core/storage.js';
import { query, type Db } from './db.js';
import { date, numOrNull, toLockRow } from './sql.js';
import { SqlAggregate } from '../aggregates.js';

const CLOCK = "date_trunc('milliseconds', clock_timestamp())";

function locksSql(s: string) {
  return {
    ensureCounter: `-- leasehold acquireLock: the per-name fence counter row of a lock (slot -1), created on first use
INSERT INTO ${s}.locks (name, slot, fence) VALUES ($1, -1, 0) ON CONFLICT DO NOTHING`,
    lockCounter: `-- leasehold acquireLock: serialise acquirers of one lock name on its counter row; the slot count it was last granted with
SELECT fence, slots FROM ${s}.locks WHERE name = $1 AND slot = -1 FOR UPDATE`,
    heldSlots: `-- leasehold acquireLock: slots of a lock name held right now
SELECT slot FROM ${s}.locks WHERE name = $1 AND slot >= 0 AND token IS NOT NULL AND expires_at > ${CLOCK}`,
    take: `-- leasehold acquireLock: issue the next fence, record the slot count granted, and take a free (or expired) slot with a fresh token
WITH f AS (UPDATE ${s}.locks SET fence = fence + 1, slots = $5 WHERE name = $1 AND slot = -1 RETURNING fence)
INSERT INTO ${s}.locks (name, slot, owner, token, fence, acquired_at, expires_at)
SELECT $1, $2, $3, md5(gen_random_uuid()::text), f.fence, ${CLOCK}, ${CLOCK} + $4::float8 * interval '1 millisecond' FROM f
ON CONFLICT (name, slot) DO UPDATE SET owner = excluded.owner, token = excluded.token, fence = excluded.fence,
  acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
RETURNING slot, token, fence, expires_at`,
    extend: `-- leasehold extendLock: extend a holding that has not expired, by its token
UPDATE ${s}.locks SET expires_at = ${CLOCK} + $3::float8 * interval '1 millisecond'
WHERE name = $1 AND slot >= 0 AND token = $2 AND expires_at > ${CLOCK} RETURNING slot`,
    release: `-- leasehold releaseLock: release a holding that has not expired, by its token
UPDATE ${s}.locks SET token = NULL, owner = NULL, expires_at = ${CLOCK}
WHERE name = $1 AND slot >= 0 AND token = $2 AND expires_at > ${CLOCK} RETURNING slot`,
    list: `-- leasehold listLocks: held (or expired, never released) lock rows by name and slot
SELECT name, slot, owner, fence, acquired_at, expires_at, expires_at <= ${CLOCK} AS expired FROM ${s}.locks
WHERE slot >= 0 AND token IS NOT NULL AND ($1::text IS NULL OR name = $1) ORDER BY name, slot`,
  };
}

export class PostgresLocks extends SqlAggregate<Db, ReturnType<typeof locksSql>> implements LockStore {
  constructor(db: Db) {
    super(db, locksSql(db.q));
  }

  async acquire(p: AcquireLockParams): Promise<LockGrant | null> {
    await this.db.run('acquireLock', this.sql.ensureCounter, [p.name]);
    return this.db.transaction('acquireLock', async (c) => {
      const [counter] = await query(c, 'acquireLock', this.sql.lockCounter, [p.name]);
      const held = new Set((await query(c, 'acquireLock', this.sql.heldSlots, [p.name])).map((r) => Number(r.slot)));
      checkLockSlots(p.name, numOrNull(counter?.slots), p.slots, held.size);
      let slot = 0;
      while (slot < p.slots && held.has(slot)) slot++;
      if (slot >= p.slots) return null;
      const [r] = await query(c, 'acquireLock', this.sql.take, [p.name, slot, p.owner, p.ttlMs, p.slots]);
      if (!r) return null;
      return { name: p.name, slot, token: String(r.token), fence: Number(r.fence), expiresAt: date(r.expires_at) };
    });
  }

  async extend(p: { name: string; token: string; ttlMs: number }): Promise<boolean> {
    return (await this.db.run('extendLock', this.sql.extend, [p.name, p.token, p.ttlMs])).length > 0;
  }

  async release(p: { name: string; token: string }): Promise<boolean> {
    return (await this.db.run('releaseLock', this.sql.release, [p.name, p.token])).length > 0;
  }

  async list(p: { name?: string } = {}): Promise<LockRow[]> {
    return (await this.db.run('listLocks', this.sql.list, [p.name ?? null])).map(toLockRow);
  }
}
