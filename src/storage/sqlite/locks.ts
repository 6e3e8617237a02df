/**
 * Distributed locks and semaphores on SQLite. Slot -1 of a name is its fence counter; slots
 * 0..n-1 are the holdings. Every write runs in one BEGIN IMMEDIATE transaction, which
 * serialises writers across processes. Semantics: the header of src/core/schedules.ts.
 */
import { randomBytes } from 'node:crypto';
import type { AcquireLockParams, LockGrant, LockRow } from '../../core/schedules.js';
import { checkLockSlots } from '../../core/schedules.js';
import type { LockStore } from '../../core/storage.js';
import type { SqliteDb } from './db.js';

const LOCK_SQL = {
  ensureCounter: `-- leasehold locks.ensureCounter: the per-name fence counter row (slot -1), created on first use
    INSERT INTO {p}locks (name, slot, fence) VALUES (@name, -1, 0) ON CONFLICT DO NOTHING`,
  storedSlots: `-- leasehold locks.storedSlots: the slot count a name was last granted with (NULL: none yet)
    SELECT slots FROM {p}locks WHERE name = @name AND slot = -1`,
  heldSlots: `-- leasehold locks.heldSlots: slots of a name held right now
    SELECT slot FROM {p}locks WHERE name = @name AND slot >= 0 AND token IS NOT NULL AND expires_at > @now`,
  bumpFence: `-- leasehold locks.bumpFence: issue the next fencing token of a name and record the slot count granted
    UPDATE {p}locks SET fence = fence + 1, slots = @slots WHERE name = @name AND slot = -1 RETURNING fence`,
  take: `-- leasehold locks.take: take a free (or expired) slot
    INSERT INTO {p}locks (name, slot, owner, token, fence, acquired_at, expires_at)
    VALUES (@name, @slot, @owner, @token, @fence, @now, @expiresAt)
    ON CONFLICT (name, slot) DO UPDATE SET owner = excluded.owner, token = excluded.token, fence = excluded.fence,
      acquired_at = excluded.acquired_at, expires_at = excluded.expires_at`,
  extend: `-- leasehold locks.extend: extend a holding that has not expired, by its token
    UPDATE {p}locks SET expires_at = @now + @ttlMs
    WHERE name = @name AND slot >= 0 AND token = @token AND expires_at > @now`,
  release: `-- leasehold locks.release: release a holding that has not expired, by its token
    UPDATE {p}locks SET token = NULL, owner = NULL, expires_at = @now
    WHERE name = @name AND slot >= 0 AND token = @token AND expires_at > @now`,
  listAll: `-- leasehold locks.listAll: held (or expired, never released) rows, by name and slot
    SELECT * FROM {p}locks WHERE slot >= 0 AND token IS NOT NULL ORDER BY name, slot`,
  listByName: `-- leasehold locks.listByName: the same for one name
    SELECT * FROM {p}locks WHERE name = @name AND slot >= 0 AND token IS NOT NULL ORDER BY slot`,
} as const;

interface SqlLock { name: string; slot: number; owner: string | null; fence: number; acquired_at: number; expires_at: number }

export class SqliteLocks implements LockStore {
  constructor(private readonly db: SqliteDb) {}

  async acquire(p: AcquireLockParams): Promise<LockGrant | null> {
    const db = this.db;
    const now = db.now();
    return db.write((): LockGrant | null => {
      db.stmt(LOCK_SQL.ensureCounter).run({ name: p.name });
      const held = new Set((db.stmt(LOCK_SQL.heldSlots).all({ name: p.name, now }) as { slot: number }[]).map((r) => r.slot));
      const stored = (db.stmt(LOCK_SQL.storedSlots).get({ name: p.name }) as { slots: number | null } | undefined)?.slots ?? null;
      checkLockSlots(p.name, stored, p.slots, held.size);
      let slot = 0;
      while (slot < p.slots && held.has(slot)) slot++;
      if (slot >= p.slots) return null;
      const { fence } = db.stmt(LOCK_SQL.bumpFence).get({ name: p.name, slots: p.slots }) as { fence: number };
      const token = randomBytes(16).toString('hex');
      const expiresAt = now + p.ttlMs;
      db.stmt(LOCK_SQL.take).run({ name: p.name, slot, owner: p.owner, token, fence, now, expiresAt });
      return { name: p.name, slot, token, fence, expiresAt: new Date(expiresAt) };
    });
  }

  async extend(p: { name: string; token: string; ttlMs: number }): Promise<boolean> {
    const now = this.db.now();
    return this.db.write(() => this.db.stmt(LOCK_SQL.extend).run({ name: p.name, token: p.token, ttlMs: p.ttlMs, now }).changes > 0);
  }

  async release(p: { name: string; token: string }): Promise<boolean> {
    const now = this.db.now();
    return this.db.write(() => this.db.stmt(LOCK_SQL.release).run({ name: p.name, token: p.token, now }).changes > 0);
  }

  async list(p: { name?: string } = {}): Promise<LockRow[]> {
    const db = this.db;
    const now = db.now();
    const rows = db.read(() => (p.name === undefined ? db.stmt(LOCK_SQL.listAll).all() : db.stmt(LOCK_SQL.listByName).all({ name: p.name })) as SqlLock[]);
    return rows.map((r) => ({
      name: r.name, slot: r.slot, owner: r.owner ?? '', fence: r.fence, acquiredAt: new Date(r.acquired_at),
      expiresAt: new Date(r.expires_at), expired: r.expires_at <= now,
    }));
  }
}
