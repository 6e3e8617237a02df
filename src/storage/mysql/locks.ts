/**
 * Distributed locks and semaphores on MySQL/MariaDB (semantics: the header of
 * src/core/schedules.ts). Slot -1 of a name is its counter row: it issues the fencing tokens and
 * keeps the slot count last granted; acquirers lock it first, so they take turns.
 */
import { randomBytes } from 'node:crypto';
import type { AcquireLockParams, LockGrant, LockRow } from '../../core/schedules.js';
import { checkLockSlots } from '../../core/schedules.js';
import type { LockStore } from '../../core/storage.js';
import { type Db, exec, run } from './db.js';
import { NOW, type Row, type Tables, micros, parseUtc } from './sql.js';
import { SqlAggregate } from '../aggregates.js';

export function locksSql(t: Tables) {
  return {
    ensureCounter: `-- leasehold acquireLock: create the counter row of a lock name on first use
      INSERT INTO ${t.locks} (name, slot, fence) VALUES (?, -1, 0) ON DUPLICATE KEY UPDATE fence = fence`,
    lockCounter: `-- leasehold acquireLock: lock the counter row (acquirers take turns); the last fence and slot count
      SELECT fence, slots FROM ${t.locks} WHERE name = ? AND slot = -1 FOR UPDATE`,
    heldSlots: `-- leasehold acquireLock: slots of a lock name held right now
      SELECT slot FROM ${t.locks} WHERE name = ? AND slot >= 0 AND token IS NOT NULL AND expires_at > ${NOW}`,
    bumpFence: `-- leasehold acquireLock: issue the next fencing token and record the slot count granted
      UPDATE ${t.locks} SET fence = fence + 1, slots = ? WHERE name = ? AND slot = -1`,
    take: `-- leasehold acquireLock: take a free (or expired) slot
      INSERT INTO ${t.locks} (name, slot, owner, token, fence, acquired_at, expires_at)
      VALUES (?, ?, ?, ?, ?, ${NOW}, ${NOW} + INTERVAL ? MICROSECOND)
      ON DUPLICATE KEY UPDATE owner = VALUES(owner), token = VALUES(token), fence = VALUES(fence),
        acquired_at = VALUES(acquired_at), expires_at = VALUES(expires_at)`,
    expiry: `-- leasehold acquireLock: the expiry of the slot just taken
      SELECT expires_at FROM ${t.locks} WHERE name = ? AND slot = ?`,
    extend: `-- leasehold extendLock: extend a holding that has not expired, by its token
      UPDATE ${t.locks} SET expires_at = ${NOW} + INTERVAL ? MICROSECOND WHERE name = ? AND slot >= 0 AND token = ? AND expires_at > ${NOW}`,
    release: `-- leasehold releaseLock: release a holding that has not expired, by its token
      UPDATE ${t.locks} SET token = NULL, owner = NULL, expires_at = ${NOW} WHERE name = ? AND slot >= 0 AND token = ? AND expires_at > ${NOW}`,
    list: `-- leasehold listLocks: held (or expired, never released) lock rows by name and slot
      SELECT name, slot, owner, fence, acquired_at, expires_at, expires_at <= ${NOW} AS expired FROM ${t.locks}
      WHERE slot >= 0 AND token IS NOT NULL AND (? IS NULL OR name = ?) ORDER BY name, slot`,
  };
}

export class MysqlLocks extends SqlAggregate<Db, ReturnType<typeof locksSql>> implements LockStore {
  constructor(db: Db) {
    super(db, locksSql(db.t));
  }

  /** The counter row is created in a statement of its own, so the READ COMMITTED transaction finds it to lock. */
  async acquire(p: AcquireLockParams): Promise<LockGrant | null> {
    await this.db.one('tryAcquireLock', (c) => exec(c, this.sql.ensureCounter, [p.name]));
    return this.db.tx('tryAcquireLock', async (c) => {
      const [counter] = await run(c, this.sql.lockCounter, [p.name]);
      const held = new Set((await run(c, this.sql.heldSlots, [p.name])).map((r) => Number(r.slot)));
      checkLockSlots(p.name, counter?.slots == null ? null : Number(counter.slots), p.slots, held.size);
      let slot = 0;
      while (slot < p.slots && held.has(slot)) slot++;
      if (slot >= p.slots) return null;
      await exec(c, this.sql.bumpFence, [p.slots, p.name]);
      const fence = Number(counter?.fence ?? 0) + 1;
      const token = randomBytes(16).toString('hex');
      await exec(c, this.sql.take, [p.name, slot, p.owner, token, fence, micros(p.ttlMs)]);
      const [e] = await run(c, this.sql.expiry, [p.name, slot]);
      return { name: p.name, slot, token, fence, expiresAt: parseUtc(e?.expires_at) };
    }, true);
  }

  async extend(p: { name: string; token: string; ttlMs: number }): Promise<boolean> {
    return (await this.db.one('extendLock', (c) => exec(c, this.sql.extend, [micros(p.ttlMs), p.name, p.token]))).affectedRows > 0;
  }

  async release(p: { name: string; token: string }): Promise<boolean> {
    return (await this.db.one('releaseLock', (c) => exec(c, this.sql.release, [p.name, p.token]))).affectedRows > 0;
  }

  async list(p: { name?: string } = {}): Promise<LockRow[]> {
    return (await this.db.one('listLocks', (c) => run(c, this.sql.list, [p.name ?? null, p.name ?? null]))).map(toLockRow);
  }
}

function toLockRow(r: Row): LockRow {
  return {
    name: String(r.name), slot: Number(r.slot), owner: r.owner == null ? '' : String(r.owner), fence: Number(r.fence),
    acquiredAt: parseUtc(r.acquired_at), expiresAt: parseUtc(r.expires_at), expired: Number(r.expired) === 1,
  };
}
